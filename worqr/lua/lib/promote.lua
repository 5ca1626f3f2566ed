-- lib/promote: due delayed and retrying jobs become ready, and the member told
-- when the queue next has due work.
-- J as in lib/terminal, plus tasks, prio, seq, delayed, retrying, timer, members,
-- idle; and sched_next in the scripts that hold the schedule keys. (needs lib/jobs, lib/ready)

-- promote(J, now, chunk) -> how many became ready
--   At most `chunk` due jobs (delayed first, then retrying), each at the back of
--   its priority; they leave their zset in the same script that makes them ready.
local function promote(J, now, chunk)
  local promoted = 0
  for _, pair in ipairs({{J.delayed, 'd'}, {J.retrying, 'r'}}) do
    local zset, state = pair[1], pair[2]
    local left = chunk - promoted
    if left <= 0 then break end
    local due = redis.call('ZRANGEBYSCORE', zset, '-inf', now, 'WITHSCORES', 'LIMIT', 0, left)
    if #due > 0 then
      local entries = {}
      for i = 1, #due, 2 do
        local entry = due[i]
        entries[#entries + 1] = entry
        local id, life = split_entry(entry)
        local record = load_job(J.jobs, id)
        -- Another life or state: a stale member (a cancel removes it; never run it).
        if record and record.l == life and record.s == state then
          move(J.counts, state, 'q')
          record.s = 'q'
          record.v = tonumber(due[i + 1])
          push_ready(J.tasks, J.prio, J.seq, record, entry, false)
          save_job(J.jobs, id, record)
          promoted = promoted + 1
        end
      end
      redis.call('ZREM', zset, unpack(entries))
    end
  end
  stat(J.stats, 'promoted', promoted)
  return promoted
end

-- next_wake(J, now) -> the earliest due time of a delayed or retrying job or,
-- when the script holds the schedule keys (J.sched_next), of a schedule's next
-- fire still to come, or when a limited queue with ready jobs opens (J.reopen), or nil. (A schedule due in the past is stalled, waiting
-- for fire times or members: the next take or poll visits it, no timer.)
local function next_wake(J, now)
  local wake = nil
  for _, zset in ipairs({J.delayed, J.retrying}) do
    local head = redis.call('ZRANGE', zset, 0, 0, 'WITHSCORES')
    if head[2] and (wake == nil or tonumber(head[2]) < wake) then
      wake = tonumber(head[2])
    end
  end
  if J.sched_next then
    local head = redis.call('ZRANGEBYSCORE', J.sched_next, '(' .. now, '+inf', 'WITHSCORES',
      'LIMIT', 0, 1)
    if head[2] and (wake == nil or tonumber(head[2]) < wake) then
      wake = tonumber(head[2])
    end
  end
  if J.reopen and (wake == nil or J.reopen < wake) then
    wake = J.reopen  -- ready jobs wait for a rate limit (lib/limit)
  end
  return wake
end

local function pick_member(set, exclude)
  for _, worker in ipairs(redis.call('SRANDMEMBER', set, 2)) do
    if worker ~= exclude then
      return worker
    end
  end
  return nil
end

-- arm_timer(J, now, exclude, wake_prefix, publish, grace)
--   One member (idle if possible, never `exclude`) is told 'due:<ms>' on its wake
--   channel: when the queue next has due work, by Redis's clock. A member already
--   told of a time no later, that has not come yet, is left alone: one member per
--   queue wakes per due instant, not every idle one.
local function arm_timer(J, now, exclude, wake_prefix, publish, grace)
  local wake = next_wake(J, now)
  if not wake then
    if J.sched_next then  -- else a schedule's next fire may still need the holder
      redis.call('DEL', J.timer)
    end
    return
  end
  local held = redis.call('HMGET', J.timer, 'w', 'at')
  local holder, at = held[1], tonumber(held[2])
  if holder and holder ~= exclude and at and at <= wake and at > now
    and redis.call('SISMEMBER', J.members, holder) == 1 then
    return
  end
  local chosen = pick_member(J.idle, exclude) or pick_member(J.members, exclude)
  if not chosen then
    redis.call('DEL', J.timer)
    return
  end
  local delay = math.max(0, wake - now)
  redis.call('HSET', J.timer, 'w', chosen, 'at', wake)
  redis.call('PEXPIRE', J.timer, delay + grace)
  redis.call(publish, wake_prefix .. chosen, 'due:' .. delay)
end
