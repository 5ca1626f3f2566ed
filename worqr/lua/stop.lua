-- stop: end a process and put its task back at the front of its queue.
-- KEYS[1] tasks       list  queued tasks; the right end is the front
-- KEYS[2] processes   hash  process id -> task
-- KEYS[3] owned       zset  the owning worker's process ids on this queue
-- KEYS[4] idle        set   workers of this queue waiting for work
-- KEYS[5] stats       hash  lifetime counters of the queue, by event
-- ARGV[1] pid
-- ARGV[2] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[3] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: 1 if the process existed and its task is queued again, else 0.
-- Errors: none.
-- Events: 'work:1' on the wake channel of one idle worker, if any.
--!include publish
--!include wake
--!include end_process
local tasks = KEYS[1]
local processes = KEYS[2]
local owned = KEYS[3]
local idle = KEYS[4]
local stats = KEYS[5]
local pid = ARGV[1]
local wake_prefix = ARGV[2]
local publish = publish_command(ARGV[3])

local task = end_process(processes, owned, pid)
if not task then
  return 0
end
redis.call('RPUSH', tasks, task)
redis.call('HINCRBY', stats, 'stopped', 1)
wake_idle(idle, wake_prefix, publish, 1)
return 1
