-- lib/end_process: end one process of a worker.
-- end_process(processes, owned, pid) -> task or false
--   Drops `pid` from its owner's set and from the processes hash. Returns the process's
--   task, or false when it no longer existed (finished, failed over to a peer, cancelled
--   or deleted): the caller is fenced and changes nothing else.
local function end_process(processes, owned, pid)
  redis.call('ZREM', owned, pid)
  local task = redis.call('HGET', processes, pid)
  if task then
    redis.call('HDEL', processes, pid)
  end
  return task
end
