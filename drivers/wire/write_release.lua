-- Writer's release (core.KindWrite). KEYS[1] = key, KEYS[2] = its
-- writer's mark. ARGV[1] = token, ARGV[2] = "w" for the cleanup of a
-- failed attempt whose writer waits on (core.Command.Ticket > 0).
-- Deletes the key if it holds the token, as the release script does, and
-- returns as it does: 1 deleted, 0 no such key, -1 the key holds another
-- token. Then, but for "w", deletes the mark if it is the caller's own:
-- a writer that won or gives up waits no more, and its mark, left by its
-- refused attempts (on a node that refused even its winning attempt, for
-- a straggling reader), must not keep readers out for a TTL. A writer's
-- attempts hold tokens that differ in their last four bytes only
-- (core.SameAcquisition): tokens come as hex, two digits a byte, so the
-- mark is the caller's when all but the last eight digits are equal.
-- Another writer's mark stays. A deletion of either is announced on the
-- key's release channel (ReleaseChannel), with the token: a waiting
-- reader's wake-up. Announcements are hints: pcall, as in the release
-- script. The next two lines are the classic pub/sub's;
-- WriteReleaseSharded replaces them as ReleaseSharded does.
local publish = "PUBLISH"
local function channel(prefix, key) return prefix .. key end
local v = redis.call("GET", KEYS[1])
local st, freed = -1, false
if v == ARGV[1] then
  redis.call("DEL", KEYS[1])
  st, freed = 1, true
elseif v == false then
  st = 0
end
if ARGV[2] ~= "w" then
  local m = redis.call("GET", KEYS[2])
  if m and #m == #ARGV[1] and string.sub(m, 1, -9) == string.sub(ARGV[1], 1, -9) then
    redis.call("DEL", KEYS[2])
    freed = true
  end
end
if freed then
  redis.pcall(publish, channel("redlock:release:", KEYS[1]), ARGV[1])
end
return st
