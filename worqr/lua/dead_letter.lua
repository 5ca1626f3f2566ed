-- dead_letter: end a process whose task failed and put the task on the failed list.
-- KEYS[1] processes   hash  process id -> task
-- KEYS[2] owned       zset  the owning worker's process ids on this queue
-- KEYS[3] failed      list  dead letters, newest on the left
-- KEYS[4] recoveries  hash  task -> times recovered from a dead worker
-- KEYS[5] stats       hash  lifetime counters of the queue, by event
-- ARGV[1] pid
-- ARGV[2] failed_max        the failed list is trimmed to this length
-- Reply: 1 if the process existed and its task is now dead-lettered, else 0.
-- Errors: none.
-- Events: none.
--!include retire
local processes = KEYS[1]
local owned = KEYS[2]
local failed = KEYS[3]
local recoveries = KEYS[4]
local stats = KEYS[5]
local pid = ARGV[1]
local failed_max = tonumber(ARGV[2])

local task = retire_process(processes, owned, recoveries, pid)
if not task then
  return 0
end
redis.call('LPUSH', failed, task)
redis.call('LTRIM', failed, 0, failed_max - 1)
redis.call('HINCRBY', stats, 'failed', 1)
return 1
