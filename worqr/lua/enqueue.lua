-- enqueue: push tasks to the back of a queue and wake idle workers.
-- KEYS[1] tasks       list  queued tasks (push left, pop right)
-- KEYS[2] idle        set   workers of this queue waiting for work
-- KEYS[3] stats       hash  lifetime counters of the queue, by event
-- ARGV[1] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[2] publish           'PUBLISH', or 'SPUBLISH' (sharded pub/sub, Redis Cluster >= 7)
--                           (SPUBLISH on a node older than 7.0 falls back to PUBLISH)
-- ARGV[3..n] task           one or more payloads, oldest first
-- Reply: integer, the queue length after the push.
-- Errors: none.
local tasks = KEYS[1]
local idle = KEYS[2]
local stats = KEYS[3]
local wake_prefix = ARGV[1]
local publish = ARGV[2]
if publish == 'SPUBLISH' and not redis.REDIS_VERSION_NUM then
  publish = 'PUBLISH'  -- a node older than 7.0 (a cluster mid-upgrade): never fail after writing
end

local length = 0
for i = 3, #ARGV do
  length = redis.call('LPUSH', tasks, ARGV[i])
end

local count = #ARGV - 2
redis.call('HINCRBY', stats, 'enqueued', count)

-- Wake at most one idle worker per task: no thundering herd.
local woken = redis.call('SPOP', idle, count)
for _, worker in ipairs(woken) do
  redis.call(publish, wake_prefix .. worker, 'work:' .. count)
end
return length
