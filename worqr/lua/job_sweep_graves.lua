-- job_sweep_graves: one chunk of the sweep of a deleted queue's groups (lib/group's
--   `grp:graves`): delete_queue renamed each incarnation's `grp` hash to
--   `grp:<epoch>` (O(1)) instead of walking it; this call reads about `count`
--   groups of one such grave with HSCAN from its saved cursor and unlinks their
--   ready keys; the grave and its entry go when the scan is through. The grave is
--   never written, so the scan sees each of its groups; a call repeated (a resend,
--   two sweepers) unlinks keys already gone, which costs nothing more. A grave
--   'log:<stamp>' is the queue's job logs (lib/job_log): its lists go the same way.
-- Cost: O(count) (HSCAN's COUNT; a small hash, at most hash-max-listpack-entries,
--   comes whole): the caller calls again until `left` is 0.
-- KEYS[1] tasks       list   the queue's ready entries (its tag names the rest)
-- Keys named by data: the queue's group keys (lib/group) and job logs (lib/job_log),
--   all in its slot ({P:Q}).
-- ARGV[1] count       about how many groups to read (HSCAN's COUNT, >= 1)
-- Reply: {left, unlinked}: graves left after this call (0: none, the queue's group
--   keys and logs are all gone); ready keys (or log lists) unlinked.
-- Errors: none.
-- Events: none.
--!include group
--!include job_log
local tasks = KEYS[1]
local count = ARGV[1]

local J = {tasks = tasks}
group_keys(J)
local grave = redis.call('HRANDFIELD', J.graves, 1, 'WITHVALUES')
if #grave == 0 then
  return {0, 0}
end
local epoch, at = grave[1], grave[2]
local stamp = string.match(epoch, '^log:(.*)$')
if stamp then
  local next_at, unlinked = sweep_log_grave(J, stamp, at, count)
  if next_at == '0' then
    redis.call('HDEL', J.graves, epoch)
  else
    redis.call('HSET', J.graves, epoch, next_at)
  end
  return {redis.call('HLEN', J.graves), unlinked}
end
local page = redis.call('HSCAN', J.gbase .. epoch, at, 'COUNT', count)
local ready = {}
for i = 1, #page[2], 2 do
  local g = page[2][i]
  if g ~= '' then  -- '' named the queue's own keys, gone with it
    ready[#ready + 1], ready[#ready + 2] = epoch_ready_keys(J, epoch, g)
  end
end
local unlinked = 0
for i = 1, #ready, 1000 do  -- unpack's stack is bounded
  unlinked = unlinked + redis.call('UNLINK', unpack(ready, i, math.min(i + 999, #ready)))
end
if page[1] == '0' then
  redis.call('UNLINK', J.gbase .. epoch)
  redis.call('HDEL', J.graves, epoch)
else
  redis.call('HSET', J.graves, epoch, page[1])
end
return {redis.call('HLEN', J.graves), unlinked}
