-- lib/timer: the member told when the queue next has due work (job_timer). J as
-- in lib/job_keys, with J.members, J.idle; J.sched_next, J.reopen where set.

-- next_wake(J, now) -> the earliest due time of a delayed or retrying job or,
-- when the script holds the schedule keys (J.sched_next), of a schedule's next
-- fire still to come, or when a limited queue with ready jobs opens (J.reopen),
-- or nil. (A schedule due in the past is stalled, waiting for fire times or
-- members: the next take or poll visits it, no timer.)
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
