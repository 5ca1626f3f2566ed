-- job_retry_many: one chunk of a bulk retry (retry_jobs; requeue_failed on a job
--   queue): give up to `count` failed or cancelled jobs a new life, queued again
--   at the back of their priority, attempts kept (lib/revive), oldest end first.
--   Jobs whose unique marker another live job holds, and records past their
--   purge time, are skipped: run it with a growing `skip` (the skipped so far)
--   until `remaining` is 0. A grouped job goes back to its group's ready keys,
--   its group's counts and place moved (lib/revive: make_ready, group_move).
-- Cost: O(count log N): one bounded call per chunk.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] idle          set     members waiting for work
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] state             'x' failed or 'c' cancelled
-- ARGV[2] count             jobs looked at, at most, by this call
-- ARGV[3] skip              jobs to pass over first (skipped by earlier calls)
-- ARGV[4] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[5] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: {moved, skipped, looked, remaining}: jobs queued again, passed over,
--   looked at; remaining = jobs of the state after the ones passed over.
-- Errors: none.
-- Events: 'work:<moved>' on the wake channel of each idle worker woken (at most one per job).
--!include publish
--!include wake
--!include clock
--!include job_keys
--!include counters
--!include revive
--!include chunk
local J = job_keys()
local idle = KEYS[16]
local stats = KEYS[17]
local state = ARGV[1]
local count = tonumber(ARGV[2])
local skip = tonumber(ARGV[3])
local wake_prefix = ARGV[4]
local publish = publish_command(ARGV[5])
J.stats = stats

local now = now_ms()

-- retry(id, record) -> whether it has a new life: not when another live job holds
--   its unique marker, nor when it is past its purge time (both passed over)
local function retry(id, record)
  return not (record.X and record.X <= now) and revive(J, id, record, now)
end

local moved, skipped, looked, remaining = walk_ended(J, state, skip, count, count, retry)
stat(J, 'redriven', moved)
wake_idle(idle, wake_prefix, publish, moved)
return {moved, skipped, looked, remaining}
