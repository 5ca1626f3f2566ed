-- job_watch: read one job: its record, payload, result and progress; optionally
--   mark it watched, so the script that ends it publishes 'done:<id>'.
-- KEYS[1] jobs          hash  id -> record (lib/jobs)
-- KEYS[2] job_data      hash  id -> payload
-- KEYS[3] job_result    hash  id -> result
-- KEYS[4] job_progress  hash  id -> last progress value
-- ARGV[1] id
-- ARGV[2] watch             '1': a waiter watches it (set only while it is live)
-- ARGV[3] with_payload      '1': reply the payload too
-- Reply: nil when there is no such job (or it is past its purge time); else
--   {record JSON (both fields merged), payload or false, result or false, progress or false, server ms}.
-- Errors: none.
-- Events: none.
--!include clock
--!include jobs
local jobs = KEYS[1]
local job_data = KEYS[2]
local job_result = KEYS[3]
local job_progress = KEYS[4]
local id = ARGV[1]
local watch = ARGV[2] == '1'
local with_payload = ARGV[3] == '1'

local now = now_ms()
local record = load_job(jobs, id, now)
if not record then
  return nil  -- none, or past its purge time (logically gone)
end
if watch and is_live(record) and not record.w then
  record.w = 1
  save_job(jobs, id, record)
end
local payload = false
if with_payload then
  payload = redis.call('HGET', job_data, id)
end
return {
  cjson.encode(record), payload, redis.call('HGET', job_result, id),
  redis.call('HGET', job_progress, id), now,
}
