-- lib/job_log: a job's log lines (job_log appends, get_job_log reads). Keys
-- named by data, from `tasks` (the queue's tag `{P:Q}`, so in its slot):
--   {P:Q}:job:logs       hash  id -> bytes in the job's log: the jobs with a log
--   {P:Q}:job:log:<id>   list  the job's lines, oldest first (at most the caps)
-- A log goes with its job's record: when it is purged (lib/purge), when a new
-- life replaces a terminal one (lib/create), and with the queue (delete_queue
-- renames `job:logs` to a grave, `job:logs:<stamp>`, listed in `grp:graves` as
-- 'log:<stamp>', whose lists job_sweep_graves unlinks a chunk per call). A list
-- whose id `job:logs` does not hold is a deleted queue's, not yet swept: it is
-- nobody's log, and the next append starts it over.
--!include group

-- log_keys(J): the log keys in J (once per call)
local function log_keys(J)
  if not J.logs then
    local base = string.sub(J.tasks, 1, -7)
    J.logs, J.logbase = base .. ':job:logs', base .. ':job:log:'
  end
end

-- drop_log(J, id): the job's log goes. A queue with no log costs one EXISTS per
--   call (J.logless), not a command per job purged.
local function drop_log(J, id)
  log_keys(J)
  if J.logless == nil then
    J.logless = redis.call('EXISTS', J.logs) == 0
  end
  if not J.logless and redis.call('HDEL', J.logs, id) == 1 then
    redis.call('UNLINK', J.logbase .. id)
  end
end

-- bury_logs(J) -> 1 when the queue had logs: `job:logs` becomes a grave (O(1))
--   named by the server's µs (another, should two deletes share one), which
--   job_sweep_graves empties; else 0
local function bury_logs(J)
  log_keys(J)
  group_keys(J)
  if redis.call('EXISTS', J.logs) == 0 then
    return 0
  end
  local t = redis.call('TIME')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  while redis.call('HEXISTS', J.graves, 'log:' .. string.format('%d', us)) == 1 do
    us = us + 1
  end
  local stamp = string.format('%d', us)
  redis.call('RENAME', J.logs, J.logs .. ':' .. stamp)
  redis.call('HSET', J.graves, 'log:' .. stamp, '0')
  return 1
end

-- sweep_log_grave(J, stamp, at, count) -> the next HSCAN cursor ('0': through),
--   lists unlinked: the lists of about `count` ids of the grave `job:logs:<stamp>`
--   unlink, unless the queue made again has a log of that id by now
local function sweep_log_grave(J, stamp, at, count)
  log_keys(J)
  local grave = J.logs .. ':' .. stamp
  local page = redis.call('HSCAN', grave, at, 'COUNT', count)
  local unlinked = 0
  for i = 1, #page[2], 2 do
    local id = page[2][i]
    if redis.call('HEXISTS', J.logs, id) == 0 then
      unlinked = unlinked + redis.call('UNLINK', J.logbase .. id)
    end
  end
  if page[1] == '0' then
    redis.call('UNLINK', grave)
  end
  return page[1], unlinked
end
