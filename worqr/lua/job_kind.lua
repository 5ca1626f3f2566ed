-- job_kind: make a queue a job queue (a worker with a job handler joins it).
-- KEYS[1] config      hash  per-queue options; 'kind' becomes 'jobs'
-- KEYS[2] tasks       list  queued tasks (a task queue's)
-- KEYS[3] processes   hash  process id -> task (a task queue's)
-- Reply: 1
-- Errors: WORQR_TASK_QUEUE when the queue holds tasks, queued or in process.
-- Events: none.
--!include kind
local config = KEYS[1]
local tasks = KEYS[2]
local processes = KEYS[3]

local refused = claim_kind(config, 'jobs', tasks, processes)
if refused then
  return refused
end
return 1
