-- Multi-key acquire (core.KindAll). KEYS[1..n] = the keys, and, for
-- core.OpAcquireFenced, KEYS[n+1..2n] = their fence counters, in the same
-- order. ARGV[1] = token, ARGV[2] = TTL in ms, ARGV[3] = n.
-- Takes every key or none. If any key exists: changes nothing and returns
-- minus the largest remaining TTL among them in ms (at least 1), or 0
-- when one has no expiry. Otherwise sets every key to the token with the
-- TTL and returns OK; fenced, first sets every counter to one more than
-- the highest of them (INCR of the highest, so that a counter that is not
-- an integer, or at the 64-bit maximum, fails the script having changed
-- nothing), and returns that fence as the fenced acquire script does.
-- Counters are compared as decimal strings, length first, which is exact
-- where Lua numbers are not.
local n = tonumber(ARGV[3])
local held, forever, most = false, false, 1
for i = 1, n do
  local t = redis.call("PTTL", KEYS[i])
  if t == -1 then
    held, forever = true, true
  elseif t ~= -2 then
    held, most = true, math.max(most, t)
  end
end
if held then
  if forever then
    return 0
  end
  return -most
end
local f, top
if #KEYS > n then
  local best
  top = KEYS[n + 1]
  for i = n + 1, 2 * n do
    local v = redis.call("GET", KEYS[i])
    if v and string.sub(v, 1, 1) ~= "-" and (best == nil or #v > #best or (#v == #best and v > best)) then
      top, best = KEYS[i], v
    end
  end
  f = redis.call("INCR", top)
  local s = redis.call("GET", top)
  for i = n + 1, 2 * n do
    if KEYS[i] ~= top then
      redis.call("SET", KEYS[i], s)
    end
  end
end
for i = 1, n do
  redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
end
if not f then
  return redis.status_reply("OK")
end
if f < 9007199254740992 then
  return f
end
return redis.call("GET", top)
