-- enqueue: push tasks to the back of a queue and wake idle workers.
-- KEYS[1] tasks       list  queued tasks (push left, pop right)
-- KEYS[2] idle        set   workers of this queue waiting for work
-- KEYS[3] stats       hash  lifetime counters of the queue, by event
-- KEYS[4] config      hash  per-queue options; 'kind': 'tasks', or 'jobs' on a job queue
-- ARGV[1] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[3..n] tasks          one or more payloads, oldest first
-- Reply: integer, the queue length after the push.
-- Errors: WORQR_JOB_QUEUE when the queue is a job queue (nothing is written).
-- Events: 'work:<n>' on the wake channel of each idle worker woken (at most one per task).
--!include publish
--!include wake
--!include kind
local tasks = KEYS[1]
local idle = KEYS[2]
local stats = KEYS[3]
local config = KEYS[4]
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local first_task = 3  -- ARGV[3..n] tasks

local refused = claim_kind(config, 'tasks')
if refused then
  return refused
end

local length = 0
for i = first_task, #ARGV do
  length = redis.call('LPUSH', tasks, ARGV[i])
end

local count = #ARGV - first_task + 1
redis.call('HINCRBY', stats, 'enqueued', count)
wake_idle(idle, wake_prefix, publish, count)
return length
