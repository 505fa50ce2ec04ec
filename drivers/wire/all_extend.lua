-- Multi-key extension (core.KindAll). KEYS = the keys, ARGV[1] = token,
-- ARGV[2] = TTL in ms.
-- If every key holds the token: sets each one's expiry to the TTL and
-- returns 1. Otherwise changes nothing and returns -1 if a key holds
-- another token, 0 if not (a key is missing). It never creates a key.
local other, missing = false, false
for i = 1, #KEYS do
  local v = redis.call("GET", KEYS[i])
  if v == false then
    missing = true
  elseif v ~= ARGV[1] then
    other = true
  end
end
if other then
  return -1
elseif missing then
  return 0
end
for i = 1, #KEYS do
  redis.call("PEXPIRE", KEYS[i], ARGV[2])
end
return 1
