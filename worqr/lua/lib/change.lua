-- lib/change: a waiting job's priority and due time change in place (job_update,
-- and a debounced submit, lib/dedup). J as in lib/job_keys.
--!include jobs
--!include counters
--!include group

-- leave_ready(J, record, entry): a queued job out of the ready structures. A
--   list entry stays, a tombstone of its old life: the job gets a new life.
local function leave_ready(J, record, entry)
  if (record.P or 0) ~= 0 then
    local prio = J.prio
    if record.G then
      group_keys(J)
      local _
      _, prio = group_ready_keys(J, record.G)
    end
    redis.call('ZREM', prio, entry)
  else
    record.l = redis.call('INCR', J.seq)
  end
end

-- change_job(J, id, record, priority, due, now) -> 1 when the job is queued now
--   and was not (wake a worker), else 0
--   record: a delayed, queued or retrying job. A queued job due later (`due`, ms;
--   nil: unchanged) is delayed; one of another priority goes to the back of it. A
--   delayed or retrying one due by now is queued, else its due time moves. A
--   grouped job moves within its group's ready keys and counts (lib/group). The
--   caller saves the record and points its marker at entry_of(id, record.l).
local function change_job(J, id, record, priority, due, now)
  local old_entry = entry_of(id, record.l)
  local state = record.s
  if state == 'q' then
    if due and due > now then
      leave_ready(J, record, old_entry)
      record.P = priority
      move(J, 'q', 'd')
      group_move(J, record, 'q', 'd', now)
      record.s = 'd'
      record.v = due
      redis.call('ZADD', J.delayed, due, entry_of(id, record.l))
    elseif priority ~= (record.P or 0) then
      leave_ready(J, record, old_entry)
      record.P = priority
      make_ready(J, record, entry_of(id, record.l), false)
    end
    return 0
  end
  record.P = priority
  local zset = J[state_name(state)]
  if due and due <= now then
    redis.call('ZREM', zset, old_entry)
    move(J, state, 'q')
    record.s = 'q'
    record.v = now
    make_ready(J, record, old_entry, false)
    group_move(J, record, state, 'q', now)
    return 1
  elseif due then
    redis.call('ZADD', zset, due, old_entry)
    record.v = due
  end
  return 0
end
