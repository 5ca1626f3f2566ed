-- lib/take: take tasks from the front of a queue as new processes of one worker,
-- numbered pid_prefix .. n for n = first + 1, first + 2, ... (lib/admit says
-- whether a call may take, and whether it is a resend).

-- replay_take(processes, pid_prefix, first, count) -> {pid1, task1, ...}
--   The reply of the take that already ran: the processes it created that still exist.
local function replay_take(processes, pid_prefix, first, count)
  local reply = {}
  for i = 1, count do
    local pid = pid_prefix .. (first + i)
    local task = redis.call('HGET', processes, pid)
    if not task then break end
    reply[#reply + 1] = pid
    reply[#reply + 1] = task
  end
  return reply
end

-- take(tasks, processes, owned, idle, seq, stats, worker, pid_prefix, first, count)
--   -> {pid1, task1, ...}
--   Pops up to `count` tasks from the front (the right end) as processes of `worker`,
--   numbered in `owned` by the queue's dequeue counter. A worker that got fewer than it
--   asked for drained the queue and enters the idle set (it wants a wake-up); one that
--   got a full batch leaves it.
local function take(tasks, processes, owned, idle, seq, stats, worker, pid_prefix, first, count)
  local reply = {}
  local taken = 0
  for i = 1, count do
    local task = redis.call('RPOP', tasks)
    if not task then break end
    local pid = pid_prefix .. (first + i)
    redis.call('HSET', processes, pid, task)
    redis.call('ZADD', owned, redis.call('INCR', seq), pid)
    reply[#reply + 1] = pid
    reply[#reply + 1] = task
    taken = i
  end
  if taken > 0 then
    redis.call('HINCRBY', stats, 'dequeued', taken)
  end
  if taken < count then
    redis.call('SADD', idle, worker)
  else
    redis.call('SREM', idle, worker)
  end
  return reply
end
