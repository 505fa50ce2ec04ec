-- Multi-key fence raise (core.KindAll). KEYS[1..n] = the keys,
-- KEYS[n+1..2n] = their fence counters, in the same order; ARGV[1] =
-- token, ARGV[2] = fence, in decimal without sign or leading zeros.
-- If every key holds the token: sets each counter to the fence if it is
-- lower (compared as the raise script does) and returns 1. Otherwise
-- changes nothing and returns as the multi-key extension does.
local n = #KEYS / 2
local other, missing = false, false
for i = 1, n do
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
local f = ARGV[2]
for i = n + 1, 2 * n do
  local c = redis.call("GET", KEYS[i])
  if c == false or string.sub(c, 1, 1) == "-" or #c < #f or (#c == #f and c < f) then
    redis.call("SET", KEYS[i], f)
  end
end
return 1
