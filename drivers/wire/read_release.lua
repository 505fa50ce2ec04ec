-- Reader's release (core.KindRead). KEYS[1] = key (the writer's),
-- KEYS[2] = its reader set. ARGV[1] = token.
-- Removes the token from the set: returns 1 if its entry had not expired,
-- 0 otherwise (a reader is never held by another). Then, if it removed an
-- unexpired entry and the set holds no unexpired reader any more (expired
-- ones are dropped), announces it on the key's release channel
-- (ReleaseChannel), with the token: a waiting writer's wake-up. A release
-- that removed nothing announces nothing: the cleanup of a refused
-- reader's attempt would otherwise wake every waiter, itself included,
-- into another refused attempt, and so on. Announcements are hints: pcall, as in the
-- release script. The next two lines are the classic pub/sub's;
-- ReadReleaseSharded replaces them as ReleaseSharded does.
local publish = "PUBLISH"
local function channel(prefix, key) return prefix .. key end
local c = redis.call("TIME")
local now = tonumber(c[1]) * 1000 + math.floor(tonumber(c[2]) / 1000)
local s = redis.call("ZSCORE", KEYS[2], ARGV[1])
local st = 0
if s and tonumber(s) > now then
  st = 1
end
if s then
  redis.call("ZREM", KEYS[2], ARGV[1])
end
-- The readers left, the expired ones dropped: no sweep of a set emptied
-- (deleted) already, and the count is the set's less what the sweep
-- removed, rather than a second count.
local n = redis.call("ZCARD", KEYS[2])
if n > 0 then
  n = n - redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
end
if st == 1 and n == 0 then
  redis.pcall(publish, channel("redlock:release:", KEYS[1]), ARGV[1])
end
return st
