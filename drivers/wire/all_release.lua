-- Multi-key release (core.KindAll). KEYS = the keys, ARGV[1] = token.
-- Deletes every key that holds the token, announcing each on its release
-- channel (ReleaseChannel), with the token, as the release script does.
-- Returns 1 if it deleted any; otherwise -1 if a key holds another token,
-- 0 if none does. The next two lines are the classic pub/sub's;
-- AllReleaseSharded replaces them as ReleaseSharded does.
local publish = "PUBLISH"
local function channel(prefix, key) return prefix .. key end
local st, other = 0, false
for i = 1, #KEYS do
  local v = redis.call("GET", KEYS[i])
  if v == ARGV[1] then
    redis.call("DEL", KEYS[i])
    redis.pcall(publish, channel("redlock:release:", KEYS[i]), ARGV[1])
    st = 1
  elseif v then
    other = true
  end
end
if st == 0 and other then
  return -1
end
return st
