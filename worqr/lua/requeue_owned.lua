-- requeue_owned: return one chunk of a worker's processes on one queue to the
-- front of the queue, newest first, so the oldest ends up next to be dequeued.
-- Idempotent and safe to stop and redo: run it until `remaining` is 0.
-- KEYS[1] tasks       list  queued tasks; the right end is the front
-- KEYS[2] processes   hash  process id -> task
-- KEYS[3] owned       zset  the worker's process ids on this queue, score = seq
-- KEYS[4] members     set   workers allowed to dequeue from this queue
-- KEYS[5] idle        set   workers of this queue waiting for work
-- KEYS[6] recoveries  hash  task -> times recovered from a dead worker
-- KEYS[7] failed      list  dead letters, newest on the left
-- KEYS[8] config      hash  per-queue options; 'max_recoveries' overrides ARGV[4]
-- KEYS[9] stats       hash  lifetime counters of the queue, by event
-- ARGV[1] worker            the worker whose processes return
-- ARGV[2] mode              'fail'    a peer fails a dead worker: leaves the queue,
--                                     counts a recovery, dead-letters poison pills
--                           'leave'   the worker stops working the queue
--                           'release' the worker hands its processes back and stays
-- ARGV[3] chunk             processes handled per call (bounds the script's run time)
-- ARGV[4] max_recoveries    a task recovered more often than this is dead-lettered;
--                           -1: never (e.g. persistent tasks)
-- ARGV[5] failed_max        the failed list is trimmed to this length
-- ARGV[6] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[7] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: {requeued, dead_lettered, remaining}
-- Errors: WORQR_JOB_QUEUE when the queue is a job queue (job_requeue_owned is its version).
-- Events: 'work:<requeued>' on the wake channel of each idle worker woken (at most one per task).
--!include publish
--!include end_process
--!include release
local tasks = KEYS[1]
local processes = KEYS[2]
local owned = KEYS[3]
local members = KEYS[4]
local idle = KEYS[5]
local recoveries = KEYS[6]
local failed = KEYS[7]
local config = KEYS[8]
local stats = KEYS[9]
local worker = ARGV[1]
local mode = ARGV[2]
local chunk = tonumber(ARGV[3])
local max_recoveries = tonumber(redis.call('HGET', config, 'max_recoveries') or ARGV[4])
local failed_max = tonumber(ARGV[5])
local wake_prefix = ARGV[6]
local publish = publish_command(ARGV[7])

local refused = start_release('tasks', config, members, idle, worker, mode)
if refused then
  return refused
end

local requeued = 0
local dead_lettered = 0
for _, pid in ipairs(newest_owned(owned, chunk)) do
  -- No task: the process was finished or cancelled meanwhile; nothing to return.
  local task = end_process(processes, owned, pid)
  if task then
    local poisoned = false
    if mode == 'fail' and max_recoveries >= 0 then
      poisoned = redis.call('HINCRBY', recoveries, task, 1) > max_recoveries
    end
    if poisoned then
      redis.call('HDEL', recoveries, task)
      redis.call('LPUSH', failed, task)
      redis.call('LTRIM', failed, 0, failed_max - 1)
      dead_lettered = dead_lettered + 1
    else
      redis.call('RPUSH', tasks, task)
      requeued = requeued + 1
    end
  end
end

returned(stats, idle, wake_prefix, publish, mode, requeued)
if dead_lettered > 0 then
  redis.call('HINCRBY', stats, 'dead_lettered', dead_lettered)
end
return {requeued, dead_lettered, redis.call('ZCARD', owned)}
