-- job_promote: make due delayed and retrying jobs ready, fire due schedules,
--   wake idle members for them, purge expired records, and tell the next member when due work comes
--   next. What the member told (the timer holder) runs when it has no free slot
--   (with one, it takes: job_take promotes too).
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] members       set     workers of this queue
-- KEYS[17] idle          set     members waiting for work
-- KEYS[18] stats         hash    lifetime counters of the queue, by event
-- KEYS[19..21] sched_keys the queue's schedule keys (lib/schedule)
-- KEYS[22] config        hash    per-queue options; limits (lib/limit)
-- Keys named by data: the queue's group keys (lib/group) and job logs (lib/job_log),
--   all in its slot ({P:Q}).
-- ARGV[1] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[3] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- Reply: {promoted, purged, refill}: refill as job_take's (cron schedules low on
--   fire times). promoted counts fired jobs too.
-- Errors: none.
-- Events: 'work:<n>' to each idle worker woken (at most one per promoted job; one
--   when a limited queue has opened again for ready jobs);
--   'due:<ms>' to the member told when due work comes next (a closed group's
--   reopening included).
--!include publish
--!include wake
--!include clock
--!include job_keys
--!include schedule
--!include purge
--!include promote
--!include limit
--!include timer
--!include group
local J = job_keys()
local members = KEYS[16]
local idle = KEYS[17]
local stats = KEYS[18]
sched_keys(J, 19)
local config = KEYS[22]
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local policy = cjson.decode(ARGV[3])
J.members, J.idle, J.stats = members, idle, stats

local now = now_ms()
local limits = read_limits(J, config)  -- and whether the queue has groups (lib/group)
local purged = purge(J, now, policy.purge_budget, policy)
local promoted, refill = promote_due(J, now, policy)
local group_reopen = grouped(J) and next_reopen(J) or nil
local woken = promoted
if limits then
  -- The timer holder had no free slot: idle members take what the limits let start
  -- now (the ready jobs a reopening was waiting for too), and no more; the timer
  -- waits for the next reopening.
  local want = math.max(promoted, has_ready(J.tasks, J.prio) and 1 or 0)
  woken = 0
  if want > 0 then
    woken, J.reopen = allowance(J, limits, now_us(), want)
  end
end
if group_reopen and (not J.reopen or group_reopen < J.reopen) then
  J.reopen = group_reopen
end
wake_idle(idle, wake_prefix, publish, woken)
arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
return {promoted, purged, refill}
