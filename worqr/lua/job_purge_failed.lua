-- job_purge_failed: forget up to `count` failed jobs now, oldest failure first
--   (their records, payloads and errors), whatever their purge time.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] stats         hash    lifetime counters of the queue, by event
-- Keys named by data: the queue's job logs (lib/job_log), in its slot ({P:Q}).
-- ARGV[1] count             failed jobs dropped at most by this call
-- Reply: {dropped, remaining}
-- Errors: none.
-- Events: none.
--!include job_keys
--!include counters
--!include purge
local J = job_keys()
local stats = KEYS[16]
local count = tonumber(ARGV[1])
J.stats = stats

local dropped = 0
for _, id in ipairs(redis.call('ZRANGE', J.failed, 0, count - 1)) do
  drop_job(J, id, 'x')
  dropped = dropped + 1
end
stat(J, 'purged', dropped)
return {dropped, redis.call('ZCARD', J.failed)}
