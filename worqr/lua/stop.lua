-- stop: end a process and put its task back at the front of its queue.
-- KEYS[1] tasks       list  queued tasks; the right end is the front
-- KEYS[2] processes   hash  process id -> task
-- KEYS[3] owned       zset  the owning worker's process ids on this queue
-- KEYS[4] idle        set   workers of this queue waiting for work
-- KEYS[5] stats       hash  lifetime counters of the queue, by event
-- ARGV[1] pid
-- ARGV[2] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[3] publish           'PUBLISH', or 'SPUBLISH' (sharded pub/sub, Redis Cluster >= 7)
--                           (SPUBLISH on a node older than 7.0 falls back to PUBLISH)
-- Reply: 1 if the process existed and its task is queued again, else 0.
-- Errors: none.
local tasks = KEYS[1]
local processes = KEYS[2]
local owned = KEYS[3]
local idle = KEYS[4]
local stats = KEYS[5]
local pid = ARGV[1]
local wake_prefix = ARGV[2]
local publish = ARGV[3]
if publish == 'SPUBLISH' and not redis.REDIS_VERSION_NUM then
  publish = 'PUBLISH'  -- a node older than 7.0 (a cluster mid-upgrade): never fail after writing
end

redis.call('ZREM', owned, pid)
local task = redis.call('HGET', processes, pid)
if not task then
  return 0
end
redis.call('HDEL', processes, pid)
redis.call('RPUSH', tasks, task)
redis.call('HINCRBY', stats, 'stopped', 1)
local woken = redis.call('SPOP', idle, 1)
for _, worker in ipairs(woken) do
  redis.call(publish, wake_prefix .. worker, 'work:1')
end
return 1
