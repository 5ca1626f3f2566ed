-- job_log_read: the newest lines of a job's log (lib/job_log), oldest first.
-- Cost: O(limit).
-- KEYS[1] jobs          hash  id -> record (lib/jobs)
-- KEYS[2] job_logs      hash  id -> bytes in its log: the jobs with a log
-- KEYS[3] job_log       list  the job's lines, oldest first
-- ARGV[1] id
-- ARGV[2] limit             lines at most (>= 1)
-- Reply: nil when there is no such job (or it is past its purge time); else its
--   newest `limit` lines, oldest first (empty: it logged nothing).
-- Errors: none.
-- Events: none.
--!include clock
--!include jobs
local jobs = KEYS[1]
local job_logs = KEYS[2]
local job_log = KEYS[3]
local id = ARGV[1]
local limit = tonumber(ARGV[2])

if not load_job(jobs, id, now_ms()) then
  return nil  -- none, or past its purge time (logically gone)
end
if redis.call('HEXISTS', job_logs, id) == 0 then
  return {}  -- none, or a deleted queue's list not yet swept (lib/job_log)
end
return redis.call('LRANGE', job_log, -limit, -1)
