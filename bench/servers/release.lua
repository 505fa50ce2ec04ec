-- Compare-and-delete. KEYS[1] = key, ARGV[1] = token.
-- Returns 1 deleted, 0 no such key, -1 the key holds another token.
-- A deletion is announced on the key's release channel (ReleaseChannel),
-- with the token, for the waiters that subscribe to it. The announcement
-- is a hint: pcall, so that a server or an ACL that refuses PUBLISH
-- still releases.
local v = redis.call("GET", KEYS[1])
if v == ARGV[1] then
  redis.call("DEL", KEYS[1])
  redis.pcall("PUBLISH", "redlock:release:" .. KEYS[1], ARGV[1])
  return 1
elseif v == false then
  return 0
end
return -1
