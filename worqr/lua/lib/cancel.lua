-- lib/cancel: cancelling a live job. J as in lib/terminal.
--!include jobs
--!include terminal
--!include group

-- unready(prio, record, entry): take a queued job out of the ready
-- structures (a cancel). A priority-0 entry stays in the list as a tombstone
-- that takes skip (removing it from the middle of a list is O(n)).
local function unready(prio, record, entry)
  if (record.P or 0) ~= 0 then
    redis.call('ZREM', prio, entry)
  end
end

-- cancel_job(J, id, record, now, policy, publish, processes, events) -> its previous state
--   Out of its index: a queued job's list entry stays as a tombstone takes skip; an
--   active job's process is deleted (its worker's acknowledgement is fenced) and
--   'cancel:<pid>' goes out on `events`, so its handler stops.
local function cancel_job(J, id, record, now, policy, publish, processes, events)
  local previous = record.s
  local entry = entry_of(id, record.l)
  if previous == 'q' then
    if record.G then
      unready_group(J, record, entry)
    else
      unready(J.prio, record, entry)
    end
  elseif previous == 'd' then
    redis.call('ZREM', J.delayed, entry)
  elseif previous == 'r' then
    redis.call('ZREM', J.retrying, entry)
  elseif previous == 'w' then
    redis.call('ZREM', J.waiting, id)  -- its children are cancelled (lib/flow)
  elseif previous == 'a' then
    redis.call('HDEL', processes, record.p)
    redis.call(publish, events, 'cancel:' .. record.p)
  end
  end_job(J, id, record, 'c', now, policy, publish)
  return previous
end
