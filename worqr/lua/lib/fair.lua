-- lib/fair: job_take's fair pick between groups (lib/group), in place of lib/start's
-- pick_jobs on a queue with groups. Round robin over `grp:ring`: the front group
-- goes to the back (one LMOVE), one job of it starts; a group left without ready
-- jobs, at its max_active or with its rate's next slot not due leaves the ring at
-- once (one LPOP: it is at the left end just after the move), so a take never
-- visits a limited, paused or empty group. Inside a group: priority, then submit
-- order (lib/ready). G: the queue's group defaults {rate, per, max_active}.
-- Also group_wake, the group step of job_take's wake phase, which a queue without
-- groups skips.
--!include jobs
--!include counters
--!include ready
--!include limit
--!include start
--!include group

-- group_closed(G, rec, micros) -> nil when the group may start a job now, else
--   'f' (at its max_active) or 't' and the ms it reopens
local function group_closed(G, rec, micros)
  local cap = rec.m or G.max_active
  if cap and rec.a >= cap then
    return 'f'
  end
  if rec.sh and rec.sh * 1000 > micros then
    return 't', rec.sh
  end
  local starts, per = rec.n or G.rate, rec.n and rec.s or G.per
  if starts then
    local slot = rate_slots({rate = starts, per = per, tat = rec.tat}, micros)
    if slot > micros then
      return 't', math.ceil(slot / 1000)
    end
  end
  return nil
end

-- spend_group(G, rec, micros): the started job took its group's next rate slot
local function spend_group(G, rec, micros)
  local starts, per = rec.n or G.rate, rec.n and rec.s or G.per
  if starts then
    local slot, spacing = rate_slots({rate = starts, per = per, tat = rec.tat}, micros)
    rec.tat = math.ceil(slot + spacing)
  end
end

-- leave_ring(J, g, rec, why, reopen): g (at the ring's left end) leaves it
local function leave_ring(J, g, rec, why, reopen)
  redis.call('LPOP', J.ring)
  rec.w = why ~= 'i' and why or nil
  if why == 't' then
    rec.o = reopen
    redis.call('ZADD', J.gtimed, reopen, g)
  end
end

-- pop_one(J, P, tasks, prio, pid_prefix, now_text) -> whether a job of these ready
--   keys started (into P); tombstones and stale entries skipped (P.skipped), nil
--   when none is left
local function pop_one(J, P, tasks, prio, pid_prefix, now_text)
  while P.skipped < P.budget do
    local entry = pop_ready(tasks, prio)
    if not entry then
      return nil
    end
    local id, life = entry_parts(entry)
    local field = hot_field(id)
    local raw = redis.call('HGET', J.jobs, field)
    local pid = pid_prefix .. (P.n + 1)
    local hot, attempt = nil, nil
    if raw and not P.taken_now[id] then
      hot, attempt = started_hot(raw, life, now_text, pid)
    end
    if hot then
      local n = P.n + 1
      P.n, P.taken_now[id] = n, true
      P.hots[#P.hots + 1], P.hots[#P.hots + 2] = field, hot
      P.spawned[#P.spawned + 1], P.spawned[#P.spawned + 2] = pid, entry
      P.ids[n], P.entries[n], P.attempts[n] = id, entry, attempt
      return true
    end
    P.skipped = P.skipped + 1
  end
  P.more = 1
  return false
end

-- drop_left_behind(J, P, g, rec, now): the entry of a group that left the ring
--   lazily (lib/group's k: paused, shut), at the left end after the move, goes now
--   (a skip, under the skip budget)
local function drop_left_behind(J, P, g, rec, now)
  redis.call('LPOP', J.ring)
  rec.k = nil
  save_group(J, g, rec, now)
  P.skipped = P.skipped + 1
  if P.skipped >= P.budget then
    P.more = 1
  end
end

-- turn(J, G, P, g, rec, pid_prefix, now_text, micros): group g's turn (it just
--   moved to the back): one job of it starts, unless it is closed; it leaves the
--   ring when it is empty, closed or full now
local function turn(J, G, P, g, rec, pid_prefix, now_text, micros)
  local why, reopen = nil, nil
  if g ~= '' then
    why, reopen = group_closed(G, rec, micros)
  end
  if not why then
    local tasks, prio = group_ready_keys(J, g)
    local started = pop_one(J, P, tasks, prio, pid_prefix, now_text)
    if started and g ~= '' then
      rec.q, rec.a = rec.q - 1, rec.a + 1
      spend_group(G, rec, micros)
      if rec.q == 0 then
        why = 'i'
        redis.call('DEL', tasks, prio)  -- tombstones only
      else
        why, reopen = group_closed(G, rec, micros)
      end
    elseif started == nil then
      why = 'i'
    end
  end
  if why then
    leave_ring(J, g, rec, why, reopen)
  end
  if why or g ~= '' then
    save_group(J, g, rec, math.floor(micros / 1000))
  end
end

-- pick_fair(J, G, want, pid_prefix, now_text, micros, skip_budget) -> picked, as
--   lib/start's pick_jobs
local function pick_fair(J, G, want, pid_prefix, now_text, micros, skip_budget)
  local P = {n = 0, more = 0, hots = {}, spawned = {}, ids = {}, entries = {}, attempts = {},
    taken_now = {}, skipped = 0, budget = skip_budget}
  group_keys(J)
  while P.n < want and P.more == 0 do
    local g = redis.call('LMOVE', J.ring, J.ring, 'RIGHT', 'LEFT')
    if not g then break end
    local rec = load_group(J, g)
    if rec.w == 'r' then
      turn(J, G, P, g, rec, pid_prefix, now_text, micros)
    else
      drop_left_behind(J, P, g, rec, math.floor(micros / 1000))
    end
  end
  tally(J, 'q', -P.n)
  tally(J, 'a', P.n)
  return P
end

-- group_defaults(J) -> G, the queue's group defaults read now: the take read none
--   (the queue had no group), and its finishes placed keep_last follow-ups of a
--   group (lib/terminal), which turned groups on
local function group_defaults(J)
  group_keys(J)
  local f = redis.call('HMGET', J.gconfig, 'group_rate', 'group_per', 'group_max_active')
  return {rate = tonumber(f[1]), per = tonumber(f[2]), max_active = tonumber(f[3])}
end

-- pick_next(J, G, want, pid_prefix, now_text, micros, skip_budget) -> picked: the
--   pick phase: round robin between groups when the queue has them (J.grouped),
--   else lib/start's pick_jobs in queue order
local function pick_next(J, G, want, pid_prefix, now_text, micros, skip_budget)
  if J.grouped then
    G = G or group_defaults(J)
    return pick_fair(J, G, want, pid_prefix, now_text, micros, skip_budget)
  end
  return pick_jobs(J, want, pid_prefix, now_text, skip_budget)
end

-- group_wake(J, count, extra) -> extra, one more when a finishing call (count 0)
--   freed a group's max_active; J.reopen the earlier of its own and the first
--   timed group's reopening (the timer waits for it)
local function group_wake(J, count, extra)
  if J.group_freed and count == 0 then
    extra = math.max(extra, 1)
  end
  if J.grouped then
    local reopen = next_reopen(J)
    if reopen and (not J.reopen or reopen < J.reopen) then
      J.reopen = reopen
    end
  end
  return extra
end
