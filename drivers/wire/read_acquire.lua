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
-- Few calls on the way to OK: one EXISTS for both keys (their TTLs only
-- once refused); no sweep of an absent set; the set's TTL read before
-- the ZADD, which keeps it, and again only if the sweep removed some
-- entries, which may have deleted the set.
if redis.call("EXISTS", KEYS[1], KEYS[3]) > 0 then
  local a, b = redis.call("PTTL", KEYS[1]), redis.call("PTTL", KEYS[3])
  if a == -1 or b == -1 then
    return 0
  end
  return -math.max(a, b, 1)
end
local c = redis.call("TIME")
local now = tonumber(c[1]) * 1000 + math.floor(tonumber(c[2]) / 1000)
local ttl = tonumber(ARGV[2])
local p = redis.call("PTTL", KEYS[2])
local swept = p ~= -2 and redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now) > 0
redis.call("ZADD", KEYS[2], now + ttl, ARGV[1])
if swept then
  p = redis.call("PTTL", KEYS[2]) -- -1 if the sweep emptied (deleted) it
end
if p < ttl then -- an absent set's new one (-2) has no expiry yet
  redis.call("PEXPIRE", KEYS[2], ttl)
end
if #KEYS < 4 then
  return redis.status_reply("OK")
end
return redis.call("GET", KEYS[4]) or "0"
