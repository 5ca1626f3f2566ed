-- job_log: append lines to a running job's log (lib/job_log), dropping its
--   oldest lines past either cap. Fenced like a finish: lines from a process that
--   no longer exists (the worker lost the job, or its life ended) change nothing.
-- Cost: O(lines + dropped).
-- KEYS[1] processes     hash  process id -> entry
-- KEYS[2] job_logs      hash  id -> bytes in its log: the jobs with a log
-- KEYS[3] job_log       list  the job's lines, oldest first
-- ARGV[1] pid
-- ARGV[2] entry             the job's id#life, as the take gave it
-- ARGV[3] max_lines         lines a log keeps at most
-- ARGV[4] max_bytes         bytes a log keeps at most (each line is shorter)
-- ARGV[5..n] lines          oldest first, at least one
-- Reply: 1 stored, 0 fenced.
-- Errors: none.
-- Events: none.
--!include jobs
local processes = KEYS[1]
local job_logs = KEYS[2]
local job_log = KEYS[3]
local pid = ARGV[1]
local entry = ARGV[2]
local max_lines = tonumber(ARGV[3])
local max_bytes = tonumber(ARGV[4])
local first_line = 5  -- ARGV[5..n] lines

if redis.call('HGET', processes, pid) ~= entry then
  return 0
end
local id = split_entry(entry)
local size = tonumber(redis.call('HGET', job_logs, id))
if not size then
  size = 0
  redis.call('DEL', job_log)  -- a deleted queue's list, not yet swept (lib/job_log)
end
for i = first_line, #ARGV do
  size = size + #ARGV[i]
end
local count = redis.call('RPUSH', job_log, unpack(ARGV, first_line))
-- The oldest lines go until both caps hold, read in pages from the front.
local dropped = 0
while count - dropped > max_lines or size > max_bytes do
  local page = redis.call('LRANGE', job_log, dropped, dropped + 99)
  if #page == 0 then
    break  -- never: the size counts the list's lines
  end
  for _, line in ipairs(page) do
    if count - dropped <= max_lines and size <= max_bytes then
      break
    end
    size = size - #line
    dropped = dropped + 1
  end
end
if dropped > 0 then
  redis.call('LTRIM', job_log, dropped, -1)
end
redis.call('HSET', job_logs, id, size)
return 1
