-- lib/terminal: the last transition of a job's life. J as in lib/job_keys, with
-- J.stats, J.notify and, where a flow's job may end, the flow keys (lib/flow).
--!include jobs
--!include counters
--!include flow
--!include group

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
-- dedup marker released, and a waiter told ('done:<id>' on notify, only when
-- one watches). A keep_last key's follow-up (lib/dedup: the record's N, waiting
-- in J.waiting for this run to end) is placed now and takes the marker: queued,
-- or delayed when its own due time is later; J.followed counts them (ready,
-- delayed) for the scripts that announce them (lib/announce; job_take takes a
-- ready one itself or wakes a worker for it). A throttle marker is not the record's: it lives its ttl.
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
    local next_id, next_life = split_entry(record.N)
    local next = load_job(J.jobs, next_id)
    if is_live(next, next_life) and next.s == 'w' then  -- not cancelled meanwhile
      redis.call('ZREM', J.waiting, next_id)
      local followed = J.followed or {0, 0}
      J.followed = followed
      if (next.v or now) > now then
        next.s = 'd'
        redis.call('ZADD', J.delayed, next.v, record.N)
        followed[2] = followed[2] + 1
      else
        next.s = 'q'
        next.v = now
        make_ready(J, next, record.N, false)
        followed[1] = followed[1] + 1
      end
      move(J, 'w', next.s)
      group_move(J, next, 'w', next.s, now)
      redis.call('HSET', J.unique, record.u, record.N)
      save_job(J.jobs, next_id, next)
    end
    record.N = nil
  end
  if record.w then
    redis.call(publish, J.notify, 'done:' .. id)
  end
  if record.g then
    flow_ended(J, id, record, state, now, policy)
  end
end
