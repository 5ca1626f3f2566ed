-- complete: finish a batch of this worker's processes of one queue and take up to
--   `count` more tasks from its front, in one call (a worker's steady state).
-- KEYS[1] tasks       list    queued tasks; the right end is the front
-- KEYS[2] processes   hash    process id -> task
-- KEYS[3] owned       zset    this worker's process ids on this queue, score = seq
-- KEYS[4] members     set     workers allowed to dequeue from this queue
-- KEYS[5] idle        set     workers of this queue waiting for work
-- KEYS[6] seq         string  per-queue dequeue counter (orders `owned`)
-- KEYS[7] recoveries  hash    task -> times recovered from a dead worker
-- KEYS[8] stats       hash    lifetime counters of the queue, by event
-- KEYS[9] config      hash    per-queue options; 'kind' is 'jobs' on a job queue
-- ARGV[1] worker            the worker's id
-- ARGV[2] pid_prefix        client-chosen, unique per call; new process i is pid_prefix .. i
-- ARGV[3] count             how many tasks to take at most (>= 0; 0 only finishes)
-- ARGV[4..n] pids           processes of this worker to finish (at most a worker's capacity)
-- Reply: {finished, taken}. finished: one integer per pid, in order: 1 if the
--   process existed and is now finished, 0 if it no longer existed (already
--   finished, failed over to a peer, cancelled or deleted): fenced exactly like
--   finish.lua. taken: flat array {pid1, task1, pid2, task2, ...} as dequeue.lua.
--   Resending the same call finishes nothing twice (a resent finish answers 0) and
--   returns the processes the first call created (a lost reply never hides a task).
-- Errors: WORQR_NOT_MEMBER when count > 0 and the worker is not (or no longer) a
--   member of the queue; nothing is finished then (resend with count 0 to finish).
--   WORQR_JOB_QUEUE when count > 0 and the queue is a job queue.
-- Events: none.
--!include retire
--!include admit
--!include take
local tasks = KEYS[1]
local processes = KEYS[2]
local owned = KEYS[3]
local members = KEYS[4]
local idle = KEYS[5]
local seq = KEYS[6]
local recoveries = KEYS[7]
local stats = KEYS[8]
local config = KEYS[9]
local worker = ARGV[1]
local pid_prefix = ARGV[2]
local count = tonumber(ARGV[3])
local first_pid = 4  -- ARGV[4..n] pids

local Q = {tasks = tasks, processes = processes, members = members, config = config}
local resent, refused = admit_take(Q, 'tasks', worker, pid_prefix, 0, count)
if refused then
  return refused
end

local finished = {}
local done = 0
for i = first_pid, #ARGV do
  if retire_process(processes, owned, recoveries, ARGV[i]) then
    done = done + 1
    finished[#finished + 1] = 1
  else
    finished[#finished + 1] = 0
  end
end
if done > 0 then
  redis.call('HINCRBY', stats, 'finished', done)
end

if resent then
  return {finished, replay_take(processes, pid_prefix, 0, count)}
end
if count == 0 then
  return {finished, {}}
end
return {finished, take(tasks, processes, owned, idle, seq, stats, worker, pid_prefix, 0, count)}
