-- job_purge_many: one chunk of a bulk purge (purge_jobs): forget, among up to
--   `count` records of one terminal state (earliest purge time first), those
--   that ended `older_than_ms` or more ago by Redis's clock (their records,
--   payloads, results and progress). Younger records are skipped: run it with a
--   growing `skip` until `remaining` is 0. Records already past their purge time
--   go too, without being counted (count_jobs no longer counts them).
-- Cost: O(count log N): one bounded call per chunk.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] stats         hash    lifetime counters of the queue, by event
-- Keys named by data: the queue's job logs (lib/job_log), in its slot ({P:Q}).
-- ARGV[1] state             'f' finished, 'x' failed or 'c' cancelled
-- ARGV[2] count             records looked at, at most, by this call
-- ARGV[3] want              records forgotten, at most, by this call (<= count)
-- ARGV[4] skip              records to pass over first (skipped by earlier calls)
-- ARGV[5] older_than_ms     how long ago a record must have ended
-- Reply: {purged, skipped, looked, remaining}: records forgotten (those past
--   their purge time not counted), passed over, looked at; remaining = records
--   of the state after the ones passed over.
-- Errors: none.
-- Events: none.
--!include clock
--!include job_keys
--!include counters
--!include purge
--!include chunk
local J = job_keys()
local stats = KEYS[16]
local state = ARGV[1]
local count = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local skip = tonumber(ARGV[4])
local older_than_ms = tonumber(ARGV[5])
J.stats = stats

local now = now_ms()
local expired = 0

-- forget(id, record) -> true: forgotten; false: too young, passed over; nil:
--   already past its purge time, forgotten without being counted
local function forget(id, record)
  if record.X and record.X <= now then
    drop_job(J, id, state)
    expired = expired + 1
    return nil
  end
  if (record.e or now) <= now - older_than_ms then
    drop_job(J, id, state)
    return true
  end
  return false
end

local purged, skipped, looked, remaining = walk_ended(J, state, skip, count, want, forget)
stat(J, 'purged', purged + expired)
return {purged, skipped, looked, remaining}
