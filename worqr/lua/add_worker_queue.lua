-- add_worker_queue: record that a live worker works on a queue (the mesh registry side).
-- Run before join_queue, so a reaper that fails the worker always finds the queue.
-- KEYS[1] alive          string  the worker's liveness
-- KEYS[2] worker_queues  set     queues the worker works on
-- KEYS[3] queues         set     known queue names
-- ARGV[1] queue
-- Reply: 1
-- Errors: WORQR_LEASE_LOST when the worker's alive key is gone.
-- Events: none.
local alive = KEYS[1]
local worker_queues = KEYS[2]
local queues = KEYS[3]
local queue = ARGV[1]

if redis.call('EXISTS', alive) == 0 then
  return redis.error_reply('WORQR_LEASE_LOST')
end
redis.call('SADD', worker_queues, queue)
redis.call('SADD', queues, queue)
return 1
