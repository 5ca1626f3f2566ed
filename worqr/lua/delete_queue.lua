-- delete_queue: drop a queue's tasks, processes and bookkeeping, and tell listeners.
-- In-process copies end with it: their finish/stop are fenced (reply 0).
-- KEYS[1..n]                every per-queue key to delete (all in the queue's slot),
--                           including each member's owned set
-- ARGV[1] events            broadcast channel of the queue
-- ARGV[2] publish           'PUBLISH', or 'SPUBLISH' (sharded pub/sub, Redis Cluster >= 7)
--                           (SPUBLISH on a node older than 7.0 falls back to PUBLISH)
-- Reply: integer, number of keys deleted.
-- Errors: none.
local events = ARGV[1]
local publish = ARGV[2]
if publish == 'SPUBLISH' and not redis.REDIS_VERSION_NUM then
  publish = 'PUBLISH'  -- a node older than 7.0 (a cluster mid-upgrade): never fail after writing
end
local deleted = 0
for _, key in ipairs(KEYS) do
  deleted = deleted + redis.call('DEL', key)
end
redis.call(publish, events, 'delete')
return deleted
