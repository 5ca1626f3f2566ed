-- lib/terminal: the last transition of a job's life, and forgetting it.
-- J is a table of the queue's keys: jobs, data, result, progress, counts,
-- stats, unique, finished, failed, cancelled, and the notify channel.
-- (needs lib/jobs; lib/flow, with J's flow keys, where a flow's job may end)

local ENDED = {f = 'finished', x = 'failed', c = 'cancelled'}
local TTL = {f = 'result_ttl', x = 'failure_ttl', c = 'cancelled_ttl'}

-- release_unique(unique, record, entry): free the record's unique marker, only if
-- it still names this life (another job may hold it by now)
local function release_unique(unique, record, entry)
  if record.u and redis.call('HGET', unique, record.u) == entry then
    redis.call('HDEL', unique, record.u)
  end
end

-- mark_ended(J, record, state, now, policy) -> purge-at ms: the record, counts and
--   stats say the job is `state` now (f, x or c); the caller indexes it.
--   The purge time is exact: ended + ttl (the job's own result ttl when it
--   finished, else its state's). Only a job a result() waiter watches (w) is
--   kept min_retention at least, so the woken waiter finds it.
local function mark_ended(J, record, state, now, policy)
  local ttl = policy[TTL[state]]
  if state == 'f' and record.k then
    ttl = record.k
  end
  if record.w then
    ttl = math.max(ttl, policy.min_retention)
  end
  local purge_at = now + ttl
  move(J.counts, record.s, state)
  record.s = state
  record.e = now
  record.X = purge_at
  stat(J.stats, ENDED[state], 1)
  return purge_at
end

-- end_job(J, id, record, state, now, policy, publish): the job is `state` now (f,
-- x or c): its purge time, its terminal index, counts, stats, its unique marker
-- released, and a waiter told ('done:<id>' on notify, only when one watches).
-- The caller has taken it out of its previous index, and saves the record.
-- (A plain job, lib/jobs, has no marker, waiter or flow: a batch of them may be
-- ended by mark_ended and indexed in one ZADD.)
local function end_job(J, id, record, state, now, policy, publish)
  local purge_at = mark_ended(J, record, state, now, policy)
  redis.call('ZADD', J[ENDED[state]], purge_at, id)
  release_unique(J.unique, record, entry_of(id, record.l))
  if record.w then
    redis.call(publish, J.notify, 'done:' .. id)
  end
  if record.g then
    flow_ended(J, id, record, state, now, policy)  -- lib/flow: the script includes it
  end
end

-- drop_job(J, id, state): forget a terminal job (its purge time came)
local function drop_job(J, id, state)
  redis.call('HDEL', J.jobs, id, hot_field(id))
  redis.call('HDEL', J.data, id)
  redis.call('HDEL', J.result, id)
  redis.call('HDEL', J.progress, id)
  redis.call('ZREM', J[ENDED[state]], id)
  tally(J.counts, state, -1)
end

-- purge(J, now, budget, policy) -> how many records went
--   Expired terminal records first (their purge time passed), then, past
--   max_retained terminal records, the earliest to expire among those that ended
--   min_retention ago or more: memory stays bounded whatever the TTLs.
--   The exact per-state counts (one HMGET) say which terminal indexes hold
--   anything, so an empty one costs no command (most queues fail and cancel little).
local function purge(J, now, budget, policy)
  local states = {'f', 'x', 'c'}
  local held = counters(J.counts, {STATE_NAMES.f, STATE_NAMES.x, STATE_NAMES.c})
  local purged = 0
  for i, state in ipairs(states) do
    if purged >= budget then break end
    if held[i] > 0 then
      local due = redis.call(
        'ZRANGEBYSCORE', J[ENDED[state]], '-inf', now, 'LIMIT', 0, budget - purged
      )
      for _, id in ipairs(due) do
        drop_job(J, id, state)
        purged = purged + 1
      end
      held[i] = held[i] - #due
    end
  end
  stat(J.stats, 'purged', purged)
  local capped = 0
  local over = held[1] + held[2] + held[3] - policy.max_retained
  while over > 0 and purged < budget do
    local first, first_index, first_at = nil, nil, nil
    for i, state in ipairs(states) do
      local head = held[i] > 0 and redis.call('ZRANGE', J[ENDED[state]], 0, 0, 'WITHSCORES') or {}
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
    drop_job(J, first, states[first_index])
    held[first_index] = held[first_index] - 1
    purged = purged + 1
    capped = capped + 1
    over = over - 1
  end
  stat(J.stats, 'purged_by_cap', capped)
  return purged
end
