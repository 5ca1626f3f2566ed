-- job_sched_refill: add fire times to a cron schedule's buffer, then fire what
--   is due (the caller computed the times from the reply that asked for them:
--   the missed ones up to then, and the next ones). Only for the version asked
--   about, and a union, so concurrent or repeated refills are harmless.
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
--!include jobs
--!include ready
--!include promote
--!include create
--!include schedule
--!include job_keys
local members = KEYS[16]
local idle = KEYS[17]
local stats = KEYS[18]
local job_sched = KEYS[19]
local job_sched_next = KEYS[20]
local job_sched_data = KEYS[21]
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local policy = cjson.decode(ARGV[3])
local name = ARGV[4]
local version = ARGV[5]
local first_fire = 6  -- ARGV[6..n] fires
J.members, J.idle, J.stats = members, idle, stats
J.sched, J.sched_next, J.sched_data = job_sched, job_sched_next, job_sched_data

local raw = redis.call('HGET', job_sched, name)
local spec = raw and cjson.decode(raw)
if not spec or spec.v ~= version or not spec.c then
  return {0, 0}
end
local now = now_ms()
local fires = {}
for i = first_fire, #ARGV do
  fires[#fires + 1] = tonumber(ARGV[i])
end
merge_fires(spec, fires)
save_schedule(J, name, spec, now)
local created = 0
if redis.call('SCARD', members) > 0 then
  created = fire_schedule(J, name, now, policy.misfire_grace, true)
end
if created > 0 then
  wake_idle(idle, wake_prefix, publish, created)
end
arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
return {1, created}
