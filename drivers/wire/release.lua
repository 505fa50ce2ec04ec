-- Compare-and-delete. KEYS[1] = key, ARGV[1] = token.
-- Returns 1 deleted, 0 no such key, -1 the key holds another token.
--
-- Without a waiter queue (one key), a deletion is announced on the key's
-- release channel (ReleaseChannel), with the token, for the waiters that
-- subscribe to it, unless ARGV[2] is "q" (core.Command.Quiet: a waiter of
-- the caller's takes the key next).
--
-- With one (core.Config.Fair): KEYS[2] = the key's waiter queue, a sorted
-- set of waiter ids by ticket; KEYS[3] = each entry's deadline, in the
-- server's ms. ARGV[2] = the caller's waiter id, ARGV[3] = its ticket, 0
-- not to queue it, or -1 to take it out of the queue (a waiter that gives
-- up), ARGV[4] = an entry's life in ms, ARGV[5] = how long a handed-over
-- key waits for its waiter, in ms; ARGV[6] = "r" for a release sent
-- again on a new connection after its first send's broke, which may or
-- may not have run (a resend: see below).
--   0. A key handed to the caller ("~" .. ARGV[2]) is the caller's to
--      release too: it won its quorum without this node.
--   1. A caller with a ticket (a failed attempt's cleanup, or a release
--      that other waiters of the caller follow) joins the queue, keeping
--      its place if it has one, and its entry lives on.
--   2. Entries past their deadline leave the queue.
--   3. If the key is now free, the first waiter (lowest ticket, then id)
--      leaves the queue with the key: it holds "~" .. id for ARGV[5] ms,
--      which only that waiter's acquire takes, announced on the waiter's
--      turn channel (TurnChannel) alone. Nobody waiting, nothing is
--      announced.
-- A resend runs so that a second run changes nothing a first run did
-- not, and a first run that never happened has all its effects now:
--   - It deletes the key only if it holds the caller's token (st == 1),
--     not "~" .. ARGV[2]: the first run may have handed the key to the
--     caller's own process (step 3), for another of its waiters.
--   - The hand-on and its announcement (step 3) run only if it deleted
--     the token: then the first run never ran. Otherwise the first run
--     freed the key and handed it on, or found it gone, or never ran on
--     a key gone or taken since; none hands it on again.
--   - A ticket (step 1) joins only if it deleted the token, or renews an
--     entry the caller still has: the first run's hand-on may have taken
--     it out of the queue. Leaving (-1) and the sweep (step 2) run as
--     they would: once gone, gone.
-- Announcements are hints: pcall, so that a server or an ACL that
-- refuses PUBLISH still releases. The next two lines are the classic
-- pub/sub's; ReleaseSharded replaces them to announce with SPUBLISH on
-- channels in the key's hash slot (ShardChannel).
local publish = "PUBLISH"
local function channel(prefix, key) return prefix .. key end
local resent = #KEYS > 1 and ARGV[6] == "r"
local v = redis.call("GET", KEYS[1])
local st = -1
if v == ARGV[1] or (#KEYS > 1 and not resent and v == "~" .. ARGV[2]) then
  redis.call("DEL", KEYS[1])
  st = 1
elseif v == false then
  st = 0
end
if #KEYS == 1 then
  if st == 1 and ARGV[2] ~= "q" then
    redis.pcall(publish, channel("redlock:release:", KEYS[1]), ARGV[1])
  end
  return st
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[3] == "-1" then
  redis.call("ZREM", KEYS[2], ARGV[2])
  redis.call("ZREM", KEYS[3], ARGV[2])
elseif ARGV[3] ~= "0" and (redis.call("ZSCORE", KEYS[2], ARGV[2]) or ((st == 1 or not resent) and redis.call("ZCARD", KEYS[2]) < 4096)) then
  redis.call("ZADD", KEYS[2], "NX", ARGV[3], ARGV[2])
  redis.call("ZADD", KEYS[3], now + tonumber(ARGV[4]), ARGV[2])
  redis.call("PEXPIRE", KEYS[2], ARGV[4])
  redis.call("PEXPIRE", KEYS[3], ARGV[4])
end
local stale = redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", now, "LIMIT", 0, 64)
for _, id in ipairs(stale) do
  redis.call("ZREM", KEYS[2], id)
  redis.call("ZREM", KEYS[3], id)
end
if st == 1 or (st == 0 and not resent) then
  local head = redis.call("ZRANGE", KEYS[2], 0, 0)[1]
  if head then
    redis.call("ZREM", KEYS[2], head)
    redis.call("ZREM", KEYS[3], head)
    redis.call("SET", KEYS[1], "~" .. head, "PX", ARGV[5])
    redis.pcall(publish, channel("redlock:turn:" .. head .. ":", KEYS[1]), "")
  end
end
return st
