-- lib/purge: forgetting terminal jobs, at their purge time or past a cap on how
-- many a queue keeps. J as in lib/job_keys, with J.stats.
--!include jobs
--!include counters
--!include job_log

local TERMINAL = {'f', 'x', 'c'}

-- drop_job(J, id, state): forget a terminal job (its purge time came)
local function drop_job(J, id, state)
  redis.call('HDEL', J.jobs, id, hot_field(id))
  redis.call('HDEL', J.data, id)
  redis.call('HDEL', J.result, id)
  redis.call('HDEL', J.progress, id)
  drop_log(J, id)
  redis.call('ZREM', J[state_name(state)], id)
  tally(J, state, -1)
end

-- purge(J, now, budget, policy) -> how many records went
--   Expired terminal records first (their purge time passed), then, past
--   max_retained terminal records, the earliest to expire among those that ended
--   min_retention ago or more: memory stays bounded whatever the TTLs.
--   The exact per-state counts (one HMGET) say which terminal indexes hold
--   anything, so an empty one costs no command (most queues fail and cancel little).
local function purge(J, now, budget, policy)
  local held = counters(J, J.counts, {state_name('f'), state_name('x'), state_name('c')})
  local purged = 0
  for i, state in ipairs(TERMINAL) do
    if purged >= budget then break end
    if held[i] > 0 then
      local due = redis.call(
        'ZRANGEBYSCORE', J[state_name(state)], '-inf', now, 'LIMIT', 0, budget - purged
      )
      for _, id in ipairs(due) do
        drop_job(J, id, state)
        purged = purged + 1
      end
      held[i] = held[i] - #due
    end
  end
  stat(J, 'purged', purged)
  local capped = 0
  local over = held[1] + held[2] + held[3] - policy.max_retained
  while over > 0 and purged < budget do
    local first, first_index, first_at = nil, nil, nil
    for i, state in ipairs(TERMINAL) do
      local head = held[i] > 0 and redis.call('ZRANGE', J[state_name(state)], 0, 0, 'WITHSCORES')
        or {}
      if head[1] and (first_at == nil or tonumber(head[2]) < first_at) then
        first, first_index, first_at = head[1], i, tonumber(head[2])
      end
    end
    if not first then
      break
    end
    local record = load_job(J.jobs, first)
    if record and record.e and record.e + policy.min_retention > now then
      break
    end
    drop_job(J, first, TERMINAL[first_index])
    held[first_index] = held[first_index] - 1
    purged = purged + 1
    capped = capped + 1
    over = over - 1
  end
  stat(J, 'purged_by_cap', capped)
  return purged
end
