-- SET NX that reports the holder's remaining TTL (core.Command.Probe).
-- KEYS[1] = key, ARGV[1] = token, ARGV[2] = TTL in ms.
-- Returns OK when it set the key. Otherwise the key holds another token:
-- returns minus its remaining TTL in ms (PTTL, at least 1), or 0 when the
-- key has no expiry.
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return redis.status_reply("OK")
end
local t = redis.call("PTTL", KEYS[1])
if t < 0 then
  return 0
end
return -math.max(t, 1)
