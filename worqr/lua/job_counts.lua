-- job_counts: how many jobs a queue holds in each state, exactly: terminal jobs
--   past their purge time count as gone even before they are purged.
-- KEYS[1] job_counts     hash  state -> count
-- KEYS[2] job_finished   zset  finished ids by purge ms
-- KEYS[3] job_failed     zset  failed ids by purge ms
-- KEYS[4] job_cancelled  zset  cancelled ids by purge ms
-- KEYS[5] job_delayed    zset  delayed entries by due ms
-- KEYS[6] job_retrying   zset  retrying entries by due ms
-- Reply: flat {state, count, ...} for the states with a count, then
--   'overdue', the delayed and retrying jobs already due (not yet promoted).
-- Errors: none.
-- Events: none.
--!include clock
local job_counts = KEYS[1]
local job_finished = KEYS[2]
local job_failed = KEYS[3]
local job_cancelled = KEYS[4]
local job_delayed = KEYS[5]
local job_retrying = KEYS[6]

local now = now_ms()
local expired = {
  finished = redis.call('ZCOUNT', job_finished, '-inf', now),
  failed = redis.call('ZCOUNT', job_failed, '-inf', now),
  cancelled = redis.call('ZCOUNT', job_cancelled, '-inf', now),
}
local reply = {}
local counts = redis.call('HGETALL', job_counts)
for i = 1, #counts, 2 do
  reply[#reply + 1] = counts[i]
  reply[#reply + 1] = tonumber(counts[i + 1]) - (expired[counts[i]] or 0)
end
reply[#reply + 1] = 'overdue'
reply[#reply + 1] = redis.call('ZCOUNT', job_delayed, '-inf', now)
  + redis.call('ZCOUNT', job_retrying, '-inf', now)
return reply
