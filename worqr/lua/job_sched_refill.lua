-- job_sched_refill: add fire times to a cron schedule's buffer, then fire what
--   is due (the caller computed the times from the reply that asked for them:
--   the missed ones up to then, and the next ones). Only for the version asked
--   about, and a union, so concurrent or repeated refills are harmless.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] members       set     workers of this queue
-- KEYS[17] idle          set     members waiting for work
-- KEYS[18] stats         hash    lifetime counters of the queue, by event
-- KEYS[19..21] sched_keys the queue's schedule keys (lib/schedule)
-- Keys named by data: the queue's group keys (lib/group) and job logs (lib/job_log),
--   all in its slot ({P:Q}).
-- ARGV[1] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[3] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[4] name              the schedule's name
-- ARGV[5] version           the spec version the times were computed for
-- ARGV[6..n] fires          fire times, ms ascending
-- Reply: {applied, created}: applied 0 when the schedule is gone or changed;
--   created the jobs its due fires created.
-- Errors: none.
-- Events: 'work:<n>' to idle workers for the jobs created; 'due:<ms>' to the
--   member told when due work comes next.
--!include publish
--!include wake
--!include clock
--!include job_keys
--!include schedule
--!include fires
--!include timer
local J = job_keys()
local members = KEYS[16]
local idle = KEYS[17]
local stats = KEYS[18]
sched_keys(J, 19)
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local policy = cjson.decode(ARGV[3])
local name = ARGV[4]
local version = ARGV[5]
local first_fire = 6  -- ARGV[6..n] fires
J.members, J.idle, J.stats = members, idle, stats

local spec = load_schedule(J, name)
if not spec or spec.v ~= version or not spec.c then
  return {0, 0}
end
local now = now_ms()
merge_fires(spec, read_fires(ARGV, first_fire))
save_schedule(J, name, spec, now)
local created = 0
if redis.call('SCARD', members) > 0 then
  created = fire_schedule(J, name, now, policy.misfire_grace, true)
end
wake_idle(idle, wake_prefix, publish, created)
arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
return {1, created}
