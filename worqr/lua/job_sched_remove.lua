-- job_sched_remove: drop a schedule of the queue (its jobs stay as they are).
-- KEYS[1] job_sched      hash    schedule name -> spec (lib/schedule)
-- KEYS[2] job_sched_next zset    schedule names by next fire ms
-- KEYS[3] job_sched_data hash    schedule name -> payload of its jobs
-- ARGV[1] name              the schedule's name
-- Reply: 1 when it existed, else 0.
-- Errors: none.
-- Events: none.
local job_sched = KEYS[1]
local job_sched_next = KEYS[2]
local job_sched_data = KEYS[3]
local name = ARGV[1]

redis.call('ZREM', job_sched_next, name)
redis.call('HDEL', job_sched_data, name)
return redis.call('HDEL', job_sched, name)
