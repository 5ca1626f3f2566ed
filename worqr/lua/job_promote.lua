-- job_promote: make due delayed and retrying jobs ready, fire due schedules,
--   wake idle members for them, purge expired records, and tell the next member when due work comes
--   next. What the member told (the timer holder) runs when it has no free slot
--   (with one, it takes: job_take promotes too).
-- KEYS[1] tasks          list    ready entries at priority 0; the right end is the front
-- KEYS[2] job_prio       zset    ready entries with a priority
-- KEYS[3] job_seq        string  lives and priority order
-- KEYS[4] jobs           hash    id -> record
-- KEYS[5] job_data       hash    id -> payload
-- KEYS[6] job_result     hash    id -> result
-- KEYS[7] job_progress   hash    id -> last progress value
-- KEYS[8] job_delayed    zset    delayed entries by due ms
-- KEYS[9] job_retrying   zset    retrying entries by due ms
-- KEYS[10] job_finished  zset    finished ids by purge ms
-- KEYS[11] job_failed    zset    failed ids by purge ms
-- KEYS[12] job_cancelled zset    cancelled ids by purge ms
-- KEYS[13] job_unique    hash    unique marker -> id#life
-- KEYS[14] job_counts    hash    state -> count
-- KEYS[15] job_timer     hash    the member told when due work comes next
-- KEYS[16] members       set     workers of this queue
-- KEYS[17] idle          set     members waiting for work
-- KEYS[18] stats         hash    lifetime counters of the queue, by event
-- KEYS[19] job_sched     hash    schedule name -> spec (lib/schedule)
-- KEYS[20] job_sched_next zset   schedule names by next fire ms
-- KEYS[21] job_sched_data hash   schedule name -> payload of its jobs
-- KEYS[22] config        hash    per-queue options; limits (lib/limit)
-- ARGV[1] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[3] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- Reply: {promoted, purged, refill}: refill as job_take's (cron schedules low on
--   fire times). promoted counts fired jobs too.
-- Errors: none.
-- Events: 'work:<n>' to each idle worker woken (at most one per promoted job; one
--   when a limited queue has opened again for ready jobs);
--   'due:<ms>' to the member told when due work comes next.
--!include publish
--!include wake
--!include jobs
--!include ready
--!include terminal
--!include promote
--!include create
--!include schedule
--!include limit
--!include job_keys
local members = KEYS[16]
local idle = KEYS[17]
local stats = KEYS[18]
local job_sched = KEYS[19]
local job_sched_next = KEYS[20]
local job_sched_data = KEYS[21]
local config = KEYS[22]
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local policy = cjson.decode(ARGV[3])
J.members, J.idle, J.stats = members, idle, stats
J.sched, J.sched_next, J.sched_data = job_sched, job_sched_next, job_sched_data

local now = now_ms()
local purged = purge(J, now, policy.purge_budget, policy)
local promoted = promote(J, now, policy.promote_chunk)
local fired, refill = fire_schedules(J, now, policy.misfire_grace)
promoted = promoted + fired
local woken = promoted
local limits = read_limits(config)
if limits then
  -- The timer holder had no free slot: idle members take what the limits let start
  -- now (the ready jobs a reopening was waiting for too), and no more; the timer
  -- waits for the next reopening.
  local want = math.max(promoted, has_ready(tasks, job_prio) and 1 or 0)
  woken = 0
  if want > 0 then
    woken, J.reopen = allowance(limits, job_counts, now_us(), want)
  end
end
if woken > 0 then
  wake_idle(idle, wake_prefix, publish, woken)
end
arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
return {promoted, purged, refill}
