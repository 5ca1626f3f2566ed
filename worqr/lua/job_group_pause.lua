-- job_group_pause: pause one group of a job queue (making it a job queue when it
--   is new; the group need not have jobs yet): from now on no take starts a job of
--   it (it leaves the ring, lib/group) until job_group_resume; its active jobs run
--   on, its delayed jobs still become due and wait, the other groups run.
-- KEYS[1] tasks       list   the queue's ready entries (a task queue's tasks)
-- KEYS[2] job_prio    zset   ready entries with a priority
-- KEYS[3] processes   hash   process id -> entry
-- KEYS[4] config      hash   per-queue options: 'kind'
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] group       the group (1 to 256 characters, no control characters)
-- Reply: 1 when it was running, 0 when it was paused already.
-- Errors: WORQR_TASK_QUEUE when the queue holds tasks (nothing is written).
-- Events: none.
--!include kind
--!include clock
--!include group
local tasks = KEYS[1]
local job_prio = KEYS[2]
local processes = KEYS[3]
local config = KEYS[4]
local group = ARGV[1]

local refused = claim_kind(config, 'jobs', tasks, processes)
if refused then
  return refused
end
local J = {tasks = tasks, prio = job_prio}
local rec = load_group(J, group)
if rec.p then
  return 0
end
rec.p = 1
leave_ring_lazily(rec)  -- O(1): the pick drops its entry
if rec.w == 't' then
  redis.call('ZREM', J.gtimed, group)
end
rec.w, rec.o = nil, nil
save_group(J, group, rec, now_ms())
return 1
