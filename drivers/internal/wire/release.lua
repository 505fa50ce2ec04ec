-- Compare-and-delete. KEYS[1] = key, ARGV[1] = token.
-- Returns 1 deleted, 0 no such key, -1 the key holds another token.
local v = redis.call("GET", KEYS[1])
if v == ARGV[1] then
  return redis.call("DEL", KEYS[1])
elseif v == false then
  return 0
end
return -1
