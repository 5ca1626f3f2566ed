-- add_worker_queue: record that a live worker works on a queue (mesh registry side).
-- Run before join_queue, so a reaper that fails the worker always finds the queue.
-- KEYS[1] alive       string  the worker's liveness
-- KEYS[2] wqueues     set     queues the worker works on
-- KEYS[3] queues      set     known queue names
-- ARGV[1] queue
-- Reply: 1
-- Errors: WORQR_LEASE_LOST when the worker's alive key is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('WORQR_LEASE_LOST')
end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
return 1
