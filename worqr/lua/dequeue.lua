-- dequeue: take up to `count` tasks from the front of a queue as new processes.
-- KEYS[1] tasks       list    queued tasks; the right end is the front
-- KEYS[2] processes   hash    process id -> task
-- KEYS[3] owned       zset    this worker's process ids on this queue, score = seq
-- KEYS[4] members     set     workers allowed to dequeue from this queue
-- KEYS[5] idle        set     workers of this queue waiting for work
-- KEYS[6] seq         string  per-queue dequeue counter (orders `owned`)
-- KEYS[7] stats       hash    lifetime counters of the queue, by event
-- KEYS[8] config      hash    per-queue options; 'kind' is 'jobs' on a job queue
-- ARGV[1] worker            the worker's id
-- ARGV[2] pid_prefix        client-chosen, unique per dequeue; process i is pid_prefix .. (first + i)
-- ARGV[3] count             how many tasks to take at most (>= 1; the client keeps it small
--                           enough that this script stays short, see DEQUEUE_CHUNK)
-- ARGV[4] first             process numbers of this call start after this one (>= 0): a large
--                           dequeue is a sequence of calls under one prefix
-- Reply: flat array {pid1, task1, pid2, task2, ...}; empty when the queue is empty.
--   Resending the same call returns the processes the first call created
--   (a lost reply never hides a task).
-- Errors: WORQR_NOT_MEMBER when the worker is not (or no longer) a member of the queue;
--   WORQR_JOB_QUEUE when the queue is a job queue.
-- Events: none.
--!include admit
--!include take
local tasks = KEYS[1]
local processes = KEYS[2]
local owned = KEYS[3]
local members = KEYS[4]
local idle = KEYS[5]
local seq = KEYS[6]
local stats = KEYS[7]
local config = KEYS[8]
local worker = ARGV[1]
local pid_prefix = ARGV[2]
local count = tonumber(ARGV[3])
local first = tonumber(ARGV[4])

local Q = {tasks = tasks, processes = processes, members = members, config = config}
local resent, refused = admit_take(Q, 'tasks', worker, pid_prefix, first, count)
if resent then
  return replay_take(processes, pid_prefix, first, count)
end
if refused then
  return refused
end
return take(tasks, processes, owned, idle, seq, stats, worker, pid_prefix, first, count)
