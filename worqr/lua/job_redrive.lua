-- job_redrive: give up to `count` failed jobs a new life, queued again, oldest
--   failure first; jobs whose unique marker another live job holds are skipped.
--   Run it with a growing `skip` (the skipped so far) until `remaining` is 0.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] idle          set     members waiting for work
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] count             failed jobs looked at, at most, by this call
-- ARGV[2] skip              failed jobs to pass over first (skipped by earlier calls)
-- ARGV[3] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[4] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: {moved, skipped, remaining}: remaining = failed jobs after the ones passed over.
-- Errors: none.
-- Events: 'work:<moved>' on the wake channel of each idle worker woken (at most one per job).
--!include publish
--!include wake
--!include clock
--!include job_keys
--!include jobs
--!include counters
--!include revive
local J = job_keys()
local idle = KEYS[16]
local stats = KEYS[17]
local count = tonumber(ARGV[1])
local skip = tonumber(ARGV[2])
local wake_prefix = ARGV[3]
local publish = publish_command(ARGV[4])
J.stats = stats

local now = now_ms()
local moved = 0
local skipped = 0
for _, id in ipairs(redis.call('ZRANGE', J.failed, skip, skip + count - 1)) do
  local record = load_job(J.jobs, id)
  if not record then
    redis.call('ZREM', J.failed, id)  -- a stray member: nothing to revive
  elseif not (record.X and record.X <= now) and revive(J, id, record, now) then
    moved = moved + 1
  else
    skipped = skipped + 1  -- its marker is held, or it is past its purge time
  end
end
stat(J, 'redriven', moved)
wake_idle(idle, wake_prefix, publish, moved)
return {moved, skipped, math.max(0, redis.call('ZCARD', J.failed) - skip - skipped)}
