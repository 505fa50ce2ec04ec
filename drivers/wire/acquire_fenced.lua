-- Fenced acquire. KEYS[1] = key, KEYS[2] = its fence counter,
-- ARGV[1] = token, ARGV[2] = TTL in ms.
-- If the key exists: changes nothing and returns minus its remaining TTL
-- in ms (PTTL, at least 1), or 0 when it has no expiry. Otherwise
-- increments the counter, sets the key to the token with the TTL, and
-- returns the counter's new value: as an integer below 2^53, as its
-- decimal string from 2^53 up, where a Lua number (a double) would round
-- it. The INCR comes first: if it fails (a counter that is not an
-- integer, or at the 64-bit maximum) the script fails having changed
-- nothing.
--
-- With a waiter queue (core.Config.Fair; KEYS[3], KEYS[4], the queue and
-- its deadlines, as in the release script; ARGV[3] the caller's waiter
-- id): a key handed to the caller ("~" .. id) is taken as a free one, and
-- the caller that takes the key leaves the queue. With ARGV[4], a ticket,
-- and ARGV[5], an entry's life in ms (core.Command.Ticket): a caller that
-- finds the key held joins the queue as the release script's step 1
-- does, so that it waits without a cleanup round to join.
local fair = #KEYS > 2
local t = redis.call("PTTL", KEYS[1])
if t ~= -2 and fair and redis.call("GET", KEYS[1]) == "~" .. ARGV[3] then
  t = -2
end
if t ~= -2 then
  if fair and ARGV[4] and (redis.call("ZSCORE", KEYS[3], ARGV[3]) or redis.call("ZCARD", KEYS[3]) < 4096) then
    local c = redis.call("TIME")
    local now = tonumber(c[1]) * 1000 + math.floor(tonumber(c[2]) / 1000)
    redis.call("ZADD", KEYS[3], "NX", ARGV[4], ARGV[3])
    redis.call("ZADD", KEYS[4], now + tonumber(ARGV[5]), ARGV[3])
    redis.call("PEXPIRE", KEYS[3], ARGV[5])
    redis.call("PEXPIRE", KEYS[4], ARGV[5])
  end
  if t < 0 then
    return 0
  end
  return -math.max(t, 1)
end
local n = redis.call("INCR", KEYS[2])
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
if fair then
  redis.call("ZREM", KEYS[3], ARGV[3])
  redis.call("ZREM", KEYS[4], ARGV[3])
end
if n < 9007199254740992 then
  return n
end
return redis.call("GET", KEYS[2])
