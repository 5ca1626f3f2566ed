-- job_pause: pause a job queue (making it a job queue when it is new): from now on
--   no take starts a job of it (lib/limit's allowance) until job_resume, on any
--   worker; active jobs run on and their finishes are taken as before, delayed
--   jobs still become due and schedules still fire, and what they make waits.
-- KEYS[1] tasks       list   the queue's ready entries (a task queue's tasks)
-- KEYS[2] processes   hash   process id -> entry
-- KEYS[3] config      hash   per-queue options: 'kind', the limits and 'paused'
-- Reply: 1 when it was running, 0 when it was paused already.
-- Errors: WORQR_TASK_QUEUE when the queue holds tasks (nothing is written).
-- Events: none.
--!include kind
local tasks = KEYS[1]
local processes = KEYS[2]
local config = KEYS[3]

local refused = claim_kind(config, 'jobs', tasks, processes)
if refused then
  return refused
end
return redis.call('HSET', config, 'paused', '1')
