-- lib/revive: a failed or cancelled job's new life.
--!include jobs
--!include counters
--!include group

local REVIVABLE = {x = true, c = true}

-- revive(J, id, record, now) -> true, or false and why ('state', 'unique')
--   The job gets a new life, queued at the back of its priority: attempts kept,
--   failures and recoveries reset, its last error kept until it finishes. Its
--   unique marker is taken again, unless another live job holds it.
local function revive(J, id, record, now)
  if not REVIVABLE[record.s] then
    return false, 'state'
  end
  if record.u then
    local holder = redis.call('HGET', J.unique, record.u)
    if holder then
      local other, life = split_entry(holder)
      if other ~= id and is_live(load_job(J.jobs, other), life) then
        return false, 'unique'
      end
    end
  end
  redis.call('ZREM', J[state_name(record.s)], id)
  redis.call('HDEL', J.result, id)
  redis.call('HDEL', J.progress, id)
  move(J, record.s, 'q')
  group_move(J, record, record.s, 'q', now)
  record.l = redis.call('INCR', J.seq)
  record.s = 'q'
  record.v = now
  record.f = 0
  record.r = 0
  record.e = nil
  record.X = nil
  record.y = nil
  record.z = nil
  record.zs = nil
  local entry = entry_of(id, record.l)
  if record.u then
    redis.call('HSET', J.unique, record.u, entry)
  end
  make_ready(J, record, entry, false)
  save_job(J.jobs, id, record)
  return true
end
