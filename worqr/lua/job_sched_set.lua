-- job_sched_set: create or replace a schedule of the queue (which becomes a job
--   queue). An equal spec (same version) is kept as it is: its anchor, buffer
--   and last fire stay, and only fire times it lacks are added. A changed spec
--   replaces it from now (a new anchor, the given buffer), keeping the last fire
--   consumed so no fire time runs twice. Either way a paused schedule stays
--   paused (every worker upserts its schedules at start).
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16..20] create_keys the queue's keys for creating jobs (lib/create)
-- KEYS[21..23] sched_keys the queue's schedule keys (lib/schedule)
-- Keys named by data: the queue's group keys (lib/group) and job logs (lib/job_log),
--   all in its slot ({P:Q}).
-- ARGV[1] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[3] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[4] name              the schedule's name
-- ARGV[5] spec              JSON: v version, c cron | e every ms, z tz, o overlap 0/1,
--                           j the jobs' options
-- ARGV[6] payload           the payload of the jobs it creates
-- ARGV[7..n] fires          a cron's next fire times, ms ascending (none for every)
-- Reply: {status, next, paused}: status 1 created, 2 replaced, 0 unchanged (an
--   equal spec); next the next fire ms, or -1 when none is known or it is paused;
--   paused 1 when it is paused, else 0.
-- Errors: WORQR_TASK_QUEUE when the queue holds tasks (it is a task queue).
-- Events: 'due:<ms>' to the member told when due work comes next.
--!include publish
--!include clock
--!include job_keys
--!include schedule
--!include fires
--!include timer
--!include kind
--!include create
local J = job_keys()
create_keys(J, 16)
sched_keys(J, 21)
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local policy = cjson.decode(ARGV[3])
local name = ARGV[4]
local spec = cjson.decode(ARGV[5])
local payload = ARGV[6]
local first_fire = 7  -- ARGV[7..n] fires

local refused = claim_kind(J.config, 'jobs', J.tasks, J.processes)
if refused then
  return refused
end
local now = now_ms()
local fires = read_fires(ARGV, first_fire)

local raw = redis.call('HGET', J.sched, name)
local old = raw and cjson.decode(raw)
if old and old.v == spec.v then
  if old.c and merge_fires(old, fires) > 0 then
    save_schedule(J, name, old, now)
    arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
  end
  return {0, (not old.p and old.n) or -1, old.p or 0}
end

if old then  -- the fire times already consumed stay consumed, a pause stays
  spec.L, spec.i, spec.p = old.L, old.i, old.p
end
if spec.e then
  spec.a = now
  spec.n = now + spec.e
else
  spec.f = {}
  merge_fires(spec, fires)
end
redis.call('HSET', J.sched_data, name, payload)
save_schedule(J, name, spec, now)
arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
return {old and 2 or 1, (not spec.p and spec.n) or -1, spec.p or 0}
