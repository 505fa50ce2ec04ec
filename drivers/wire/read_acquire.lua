-- Reader's acquire (core.KindRead). KEYS[1] = key (the writer's),
-- KEYS[2] = its reader set, KEYS[3] = its writer's mark, and, for
-- core.OpAcquireFenced, KEYS[4] = its fence counter. ARGV[1] = token,
-- ARGV[2] = TTL in ms.
-- If the key or the mark exists: changes nothing and returns minus the
-- larger of their remaining TTLs in ms (at least 1), or 0 when one has no
-- expiry. Otherwise drops the readers whose expiry (their score, in the
-- server's ms) has passed, adds the token with the server's time plus the
-- TTL (or renews it), makes the set last at least the TTL, and returns OK;
-- fenced, the counter's value as a decimal string ("0" if none): a reader
-- reads the last writer's fence and never raises it.
local a, b = redis.call("PTTL", KEYS[1]), redis.call("PTTL", KEYS[3])
if a ~= -2 or b ~= -2 then
  if a == -1 or b == -1 then
    return 0
  end
  return -math.max(a, b, 1)
end
local c = redis.call("TIME")
local now = tonumber(c[1]) * 1000 + math.floor(tonumber(c[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
redis.call("ZADD", KEYS[2], now + ttl, ARGV[1])
if redis.call("PTTL", KEYS[2]) < ttl then
  redis.call("PEXPIRE", KEYS[2], ttl)
end
if #KEYS < 4 then
  return redis.status_reply("OK")
end
return redis.call("GET", KEYS[4]) or "0"
