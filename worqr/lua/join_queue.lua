-- join_queue: let a worker dequeue from a queue and wait for its wake-ups.
-- KEYS[1] members     set   workers allowed to dequeue from this queue
-- KEYS[2] idle        set   workers of this queue waiting for work
-- ARGV[1] worker            the worker's id
-- Reply: 1
-- Errors: none.
-- Events: none.
local members = KEYS[1]
local idle = KEYS[2]
local worker = ARGV[1]

redis.call('SADD', members, worker)
redis.call('SADD', idle, worker)
return 1
