-- lib/promote: due delayed and retrying jobs become ready; with due schedules
-- and due groups, the promote phase of job_take and job_promote. J as in
-- lib/job_keys, with J.stats and the schedule keys (lib/schedule's sched_keys).
--!include jobs
--!include counters
--!include group
--!include schedule

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
          move(J, state, 'q')
          record.s = 'q'
          record.v = tonumber(due[i + 1])
          make_ready(J, record, entry, false)
          group_move(J, record, state, 'q', now)
          save_job(J.jobs, id, record)
          promoted = promoted + 1
        end
      end
      redis.call('ZREM', zset, unpack(entries))
    end
  end
  stat(J, 'promoted', promoted)
  return promoted
end

-- promote_due(J, now, policy) -> promoted, refill, timed: the promote phase, run
--   only when the queue has timed work (timed; one EXISTS when it has none, the
--   common case). Due delayed and retrying jobs become ready, due schedules fire
--   (refill as lib/schedule's fire_schedules) and due groups go back to the ring
--   (lib/group); promoted counts all three.
local function promote_due(J, now, policy)
  local timed_keys = {J.delayed, J.retrying, J.sched_next}
  if grouped(J) then
    group_keys(J)
    timed_keys[4] = J.gtimed
  end
  if redis.call('EXISTS', unpack(timed_keys)) == 0 then
    return 0, {}, false
  end
  local promoted = promote(J, now, policy.promote_chunk)
  local fired, refill = fire_schedules(J, now, policy.misfire_grace)
  if J.grouped then
    promoted = promoted + reopen_groups(J, now, policy.promote_chunk)
  end
  return promoted + fired, refill, true
end
