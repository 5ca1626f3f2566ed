-- join_queue: let a worker dequeue from a queue and wait for its wake-ups.
-- KEYS[1] members     set   workers allowed to dequeue from this queue
-- KEYS[2] idle        set   workers of this queue waiting for work
-- ARGV[1] worker_id
-- Reply: 1
-- Errors: none.
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
