-- job_purge_failed: forget up to `count` failed jobs now, oldest failure first
--   (their records, payloads and errors), whatever their purge time.
-- KEYS[1] tasks          list    ready entries at priority 0; the right end is the front
-- KEYS[2] job_prio       zset    ready entries with a priority
-- KEYS[3] job_seq        string  lives and priority order
-- KEYS[4] jobs           hash    id -> record
-- KEYS[5] job_data       hash    id -> payload
-- KEYS[6] job_result     hash    id -> result
-- KEYS[7] job_progress   hash    id -> last progress value
-- KEYS[8] job_delayed    zset    delayed entries by due ms
-- KEYS[9] job_retrying   zset    retrying entries by due ms
-- KEYS[10] job_finished  zset    finished ids by purge ms
-- KEYS[11] job_failed    zset    failed ids by purge ms
-- KEYS[12] job_cancelled zset    cancelled ids by purge ms
-- KEYS[13] job_unique    hash    unique marker -> id#life
-- KEYS[14] job_counts    hash    state -> count
-- KEYS[15] job_timer     hash    the member told when due work comes next
-- KEYS[16] stats         hash    lifetime counters of the queue, by event
-- ARGV[1] count             failed jobs dropped at most by this call
-- Reply: {dropped, remaining}
-- Errors: none.
-- Events: none.
--!include jobs
--!include terminal
--!include job_keys
local stats = KEYS[16]
local count = tonumber(ARGV[1])
J.stats = stats

local dropped = 0
for _, id in ipairs(redis.call('ZRANGE', job_failed, 0, count - 1)) do
  drop_job(J, id, 'x')
  dropped = dropped + 1
end
stat(stats, 'purged', dropped)
return {dropped, redis.call('ZCARD', job_failed)}
