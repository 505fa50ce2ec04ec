-- Compare-and-PEXPIRE. KEYS[1] = key, ARGV[1] = token, ARGV[2] = TTL in ms.
-- Returns 1 extended, 0 no such key, -1 the key holds another token.
-- It never creates the key: an expired or lost lock stays lost.
local v = redis.call("GET", KEYS[1])
if v == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
elseif v == false then
  return 0
end
return -1
