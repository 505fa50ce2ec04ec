-- SET NX that reports the holder's remaining TTL (core.Command.Probe).
-- KEYS[1] = key, ARGV[1] = token, ARGV[2] = TTL in ms.
-- Returns OK when it set the key. Otherwise the key holds another token:
-- returns minus its remaining TTL in ms (PTTL, at least 1), or 0 when the
-- key has no expiry.
--
-- With a waiter queue (core.Config.Fair; KEYS[2], KEYS[3], the queue and
-- its deadlines, as in the release script): ARGV[3] = the caller's waiter
-- id, ARGV[4] = a ticket to queue it again once it takes the key (more
-- waiters of its own follow), or 0, ARGV[5] = an entry's life in ms. A key
-- handed to the caller ("~" .. id) is taken as a free one; the caller that
-- takes the key leaves the queue, or goes to its back with ARGV[4].
local fair = #KEYS > 1
local took = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
if not took and fair and redis.call("GET", KEYS[1]) == "~" .. ARGV[3] then
  took = redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
end
if took then
  if fair and ARGV[4] ~= "0" then
    local t = redis.call("TIME")
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    redis.call("ZADD", KEYS[2], ARGV[4], ARGV[3])
    redis.call("ZADD", KEYS[3], now + tonumber(ARGV[5]), ARGV[3])
    redis.call("PEXPIRE", KEYS[2], ARGV[5])
    redis.call("PEXPIRE", KEYS[3], ARGV[5])
  elseif fair then
    redis.call("ZREM", KEYS[2], ARGV[3])
    redis.call("ZREM", KEYS[3], ARGV[3])
  end
  return redis.status_reply("OK")
end
local t = redis.call("PTTL", KEYS[1])
if t < 0 then
  return 0
end
return -math.max(t, 1)
