-- lib/retire: end a process whose task leaves its queue for good (finished or
-- dead-lettered): the task's count of recoveries goes with it, since that count
-- only matters while the task may come back (finish, complete, dead_letter).
--!include end_process

-- retire_process(processes, owned, recoveries, pid) -> task or false
--   end_process, then the task's entry in `recoveries` dropped. False when the
--   process no longer existed: the caller is fenced and changes nothing else.
local function retire_process(processes, owned, recoveries, pid)
  local task = end_process(processes, owned, pid)
  if task then
    redis.call('HDEL', recoveries, task)
  end
  return task
end
