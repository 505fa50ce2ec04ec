-- Reader's extension (core.KindRead). KEYS[1] = key (the writer's),
-- KEYS[2] = its reader set. ARGV[1] = token, ARGV[2] = TTL in ms.
-- If the set holds the token unexpired: sets its expiry to the server's
-- time plus the TTL, makes the set last at least the TTL, and returns 1;
-- otherwise 0. It never adds a reader, and a waiting writer's mark does
-- not stop it: a reader under a lease is the writer's to wait for.
local c = redis.call("TIME")
local now = tonumber(c[1]) * 1000 + math.floor(tonumber(c[2]) / 1000)
local ttl = tonumber(ARGV[2])
local s = redis.call("ZSCORE", KEYS[2], ARGV[1])
if not s or tonumber(s) <= now then
  return 0
end
redis.call("ZADD", KEYS[2], "XX", now + ttl, ARGV[1])
if redis.call("PTTL", KEYS[2]) < ttl then
  redis.call("PEXPIRE", KEYS[2], ttl)
end
return 1
