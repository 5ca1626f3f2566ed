-- job_resume: let a paused job queue's jobs start again, and wake as many idle
--   workers as its ready jobs (no more than it has idle, and no more than its
--   limits let start now: at least one when a rate keeps it closed for now, whose
--   take arms the timer for the reopening). A queue that is not paused (a task
--   queue, an unknown one) is left as it is.
-- KEYS[1] config      hash   per-queue options: the limits and 'paused' (lib/limit)
-- KEYS[2] idle        set    members waiting for work
-- KEYS[3] job_counts  hash   state -> count (the ready jobs are 'queued')
-- ARGV[1] wake_prefix per-worker wake channel = wake_prefix .. worker id
-- ARGV[2] publish     'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: {resumed, woken}: resumed 1 when it was paused, else 0 (nothing done);
--   woken the idle workers told.
-- Errors: none.
-- Events: 'work:<n>' on the wake channel of each idle worker woken.
--!include publish
--!include wake
--!include limit
local config = KEYS[1]
local idle = KEYS[2]
local job_counts = KEYS[3]
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])

if redis.call('HDEL', config, 'paused') == 0 then
  return {0, 0}
end
local J = {config = config, counts = job_counts}
local ready = tonumber(redis.call('HGET', job_counts, 'queued') or '0')
local wake = ready
local limits = read_limits(J, config)
if limits and ready > 0 then
  local allowed = allowance(J, limits, now_us(), ready)
  wake = math.max(1, allowed)
end
wake = math.min(wake, redis.call('SCARD', idle))
if wake > 0 then
  wake_idle(idle, wake_prefix, publish, wake)
end
return {1, wake}
