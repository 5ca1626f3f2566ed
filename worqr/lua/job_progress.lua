-- job_progress: store the last progress value of a running job. Fenced like a
--   finish: a report from a process that no longer exists changes nothing.
-- KEYS[1] jobs          hash  id -> record
-- KEYS[2] job_progress  hash  id -> last progress value
-- KEYS[3] processes     hash  process id -> entry
-- ARGV[1] pid
-- ARGV[2] entry             the job's id#life, as the take gave it
-- ARGV[3] value             at most 4 KB
-- ARGV[4] notify            the queue's channel for waiters
-- ARGV[5] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: 1 stored, 0 fenced.
-- Errors: none.
-- Events: 'progress:<id>' on notify when someone waits for the job.
--!include publish
--!include jobs
local jobs = KEYS[1]
local job_progress = KEYS[2]
local processes = KEYS[3]
local pid = ARGV[1]
local entry = ARGV[2]
local value = ARGV[3]
local notify = ARGV[4]
local publish = publish_command(ARGV[5])

if redis.call('HGET', processes, pid) ~= entry then
  return 0
end
local id = split_entry(entry)
redis.call('HSET', job_progress, id, value)
local record = load_job(jobs, id)
if record and record.w then
  redis.call(publish, notify, 'progress:' .. id)
end
return 1
