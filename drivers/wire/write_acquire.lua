-- Writer's acquire (core.KindWrite). KEYS[1] = key, KEYS[2] = its reader
-- set, KEYS[3] = its writer's mark, and, for core.OpAcquireFenced,
-- KEYS[4] = its fence counter. ARGV[1] = token, ARGV[2] = TTL in ms.
-- If the key exists: changes nothing and returns minus its remaining TTL
-- in ms (at least 1), or 0 when it has no expiry. Otherwise drops the
-- readers whose expiry has passed; if a reader is left, marks the key as
-- waited for (the mark holds the token for the TTL: no new reader is
-- admitted while it lives) and returns minus the time until the last
-- reader's expiry (at least 1). Otherwise sets the key as the mutex's
-- acquire does (fenced: increments the counter first, and returns it as
-- the fenced acquire script does), deletes the mark if it is the
-- caller's own (another writer's stays), and returns OK or the fence.
-- A writer's attempts hold tokens that differ in their last four bytes
-- only (core.SameAcquisition): the mark its refused attempts left is its
-- own when all but the last four bytes of the tokens are equal. Tokens
-- come as hex, two digits a byte: all but the last eight digits.
local t = redis.call("PTTL", KEYS[1])
if t ~= -2 then
  if t < 0 then
    return 0
  end
  return -math.max(t, 1)
end
local c = redis.call("TIME")
local now = tonumber(c[1]) * 1000 + math.floor(tonumber(c[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
local last = redis.call("ZRANGE", KEYS[2], -1, -1, "WITHSCORES")
if last[1] then
  redis.call("SET", KEYS[3], ARGV[1], "PX", ARGV[2])
  return -math.max(tonumber(last[2]) - now, 1)
end
local n
if #KEYS > 3 then
  n = redis.call("INCR", KEYS[4])
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
local m = redis.call("GET", KEYS[3])
if m and #m == #ARGV[1] and string.sub(m, 1, -9) == string.sub(ARGV[1], 1, -9) then
  redis.call("DEL", KEYS[3])
end
if not n then
  return redis.status_reply("OK")
end
if n < 9007199254740992 then
  return n
end
return redis.call("GET", KEYS[4])
