-- Fence raise. KEYS[1] = key, KEYS[2] = its fence counter,
-- ARGV[1] = token, ARGV[2] = fence, in decimal without sign or leading
-- zeros. Returns 1 raised (or already at least the fence), 0 no such key,
-- -1 the key holds another token. Only when the key holds the token is
-- the counter set to the fence, and only if it is lower: it never lowers
-- the counter nor creates the key. The counter and the fence are
-- compared as decimal strings, length first, which is exact where Lua
-- numbers (doubles) are not, from 2^53 up.
local v = redis.call("GET", KEYS[1])
if v == false then
  return 0
elseif v ~= ARGV[1] then
  return -1
end
local c, f = redis.call("GET", KEYS[2]), ARGV[2]
if c == false or string.sub(c, 1, 1) == "-" or #c < #f or (#c == #f and c < f) then
  redis.call("SET", KEYS[2], f)
end
return 1
