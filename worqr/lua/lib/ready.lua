-- lib/ready: the ready jobs of a queue, by priority.
-- Priority 0 (the default) lives in the `tasks` list, pushed left, popped right
-- (right = front), O(1). Other priorities live in `job_prio`, scored
-- -priority * 2^32 + order: negative scores (priority > 0) run before the list,
-- positive ones (priority < 0) after it; equal priorities in submit order.

local PRIO_SCALE = 4294967296

-- push_ready(tasks, prio, seq, record, entry, front): make the job ready. At the
-- back of its priority, or (front) where it was: a job returned from a worker
-- keeps its place (the list's front; its original score).
local function push_ready(tasks, prio, seq, record, entry, front)
  if (record.P or 0) == 0 then
    if front then
      redis.call('RPUSH', tasks, entry)
    else
      redis.call('LPUSH', tasks, entry)
    end
    return
  end
  if not front or not record.q then
    record.q = redis.call('INCR', seq) % PRIO_SCALE
  end
  redis.call('ZADD', prio, -record.P * PRIO_SCALE + record.q, entry)
end

-- pop_ready(tasks, prio) -> the next ready entry, or nil
local function pop_ready(tasks, prio)
  local head = redis.call('ZRANGE', prio, 0, 0, 'WITHSCORES')
  if head[1] and tonumber(head[2]) < 0 then
    redis.call('ZREM', prio, head[1])
    return head[1]
  end
  local entry = redis.call('RPOP', tasks)
  if entry then
    return entry
  end
  if head[1] then
    redis.call('ZREM', prio, head[1])
    return head[1]
  end
  return nil
end

-- pop_ready_many(tasks, prio, n) -> up to n next ready entries (a list, n >= 1), or
--   false when none: one at a time while some have a priority, else n at once
local function pop_ready_many(tasks, prio, n)
  if redis.call('EXISTS', prio) == 1 then
    local entry = pop_ready(tasks, prio)
    return entry and {entry} or false
  end
  return redis.call('RPOP', tasks, n)
end
