-- job_sched_pause: pause a schedule of the queue: it fires nothing until
--   job_sched_resume (its spec's p; it leaves sched_next, so no visit finds it
--   due), and an upsert of it (job_sched_set, which every worker makes at start)
--   keeps the pause.
-- KEYS[1..3] sched_keys the queue's schedule keys (lib/schedule)
-- Keys named by data: the queue's group keys (lib/group) and job logs (lib/job_log),
--   all in its slot ({P:Q}).
-- ARGV[1] name              the schedule's name
-- Reply: 1 when the schedule exists (paused now, or already), 0 when it does not.
-- Errors: none.
-- Events: none.
--!include schedule
local J = {}
sched_keys(J, 1)
local name = ARGV[1]

local spec = load_schedule(J, name)
if not spec then
  return 0
end
if not spec.p then
  spec.p = 1
  save_schedule(J, name, spec, 0)
end
return 1
