-- SET NX that reports the holder's remaining TTL (core.Command.Probe).
-- KEYS[1] = key, ARGV[1] = token, ARGV[2] = TTL in ms.
-- Returns OK when it set the key. Otherwise the key holds another token:
-- returns minus its remaining TTL in ms (PTTL, at least 1), or 0 when the
-- key has no expiry.
--
-- With a waiter queue (core.Config.Fair; KEYS[2], KEYS[3], the queue and
-- its deadlines, as in the release script): ARGV[3] = the caller's waiter
-- id. A key handed to the caller ("~" .. id) is taken as a free one, and
-- the caller that takes the key leaves the queue. With ARGV[4], a
-- ticket, and ARGV[5], an entry's life in ms (core.Command.Ticket): a
-- caller that finds the key held joins the queue as the release script's
-- step 1 does, so that it waits without a cleanup round to join.
local fair = #KEYS > 1
local took = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
if not took and fair and redis.call("GET", KEYS[1]) == "~" .. ARGV[3] then
  took = redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
end
if took then
  if fair then
    redis.call("ZREM", KEYS[2], ARGV[3])
    redis.call("ZREM", KEYS[3], ARGV[3])
  end
  return redis.status_reply("OK")
end
if fair and ARGV[4] and (redis.call("ZSCORE", KEYS[2], ARGV[3]) or redis.call("ZCARD", KEYS[2]) < 4096) then
  local c = redis.call("TIME")
  local now = tonumber(c[1]) * 1000 + math.floor(tonumber(c[2]) / 1000)
  redis.call("ZADD", KEYS[2], "NX", ARGV[4], ARGV[3])
  redis.call("ZADD", KEYS[3], now + tonumber(ARGV[5]), ARGV[3])
  redis.call("PEXPIRE", KEYS[2], ARGV[5])
  redis.call("PEXPIRE", KEYS[3], ARGV[5])
end
local t = redis.call("PTTL", KEYS[1])
if t < 0 then
  return 0
end
return -math.max(t, 1)
