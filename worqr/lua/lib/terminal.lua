-- lib/terminal: the last transition of a job's life. J as in lib/job_keys, with
-- J.stats, J.notify and, where a flow's job may end, the flow keys (lib/flow).
--!include jobs
--!include counters
--!include flow
--!include group
--!include follow

local TTL = {f = 'result_ttl', x = 'failure_ttl', c = 'cancelled_ttl'}

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
  move(J, record.s, state)
  group_move(J, record, record.s, state, now)
  record.s = state
  record.e = now
  record.X = purge_at
  stat(J, state_name(state), 1)
  return purge_at
end

-- end_job(J, id, record, state, now, policy, publish): the job is `state` now (f,
-- x or c): its purge time, its terminal index, counts, stats, its unique or
-- dedup marker released (a keep_last key's follow-up takes it, lib/follow; a
-- throttle marker lives its ttl, lib/dedup), and a waiter told ('done:<id>' on
-- notify, only when one watches).
-- The caller has taken it out of its previous index, and saves the record.
-- (A plain job, lib/jobs, has none of these: lib/finish ends a batch of them
-- with mark_ended and one ZADD.)
local function end_job(J, id, record, state, now, policy, publish)
  local purge_at = mark_ended(J, record, state, now, policy)
  redis.call('ZADD', J[state_name(state)], purge_at, id)
  local entry = entry_of(id, record.l)
  if record.u and redis.call('HGET', J.unique, record.u) == entry then
    redis.call('HDEL', J.unique, record.u)  -- unless another job holds it by now
  end
  if record.N then
    follow_up(J, record.u, record.N, now)
    record.N = nil
  end
  if record.w then
    redis.call(publish, J.notify, 'done:' .. id)
  end
  if record.g then
    flow_ended(J, id, record, state, now, policy)
  end
end
