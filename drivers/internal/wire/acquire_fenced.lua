-- Fenced acquire. KEYS[1] = key, KEYS[2] = its fence counter,
-- ARGV[1] = token, ARGV[2] = TTL in ms.
-- If the key exists: returns nil (false) and changes nothing. Otherwise
-- increments the counter, sets the key to the token with the TTL, and
-- returns the counter's new value: as an integer below 2^53, as its
-- decimal string from 2^53 up, where a Lua number (a double) would round
-- it. The INCR comes first: if it fails (a counter that is not an
-- integer, or at the 64-bit maximum) the script fails having changed
-- nothing.
if redis.call("EXISTS", KEYS[1]) == 1 then
  return false
end
local n = redis.call("INCR", KEYS[2])
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
if n < 9007199254740992 then
  return n
end
return redis.call("GET", KEYS[2])
