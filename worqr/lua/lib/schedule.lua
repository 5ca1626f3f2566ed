-- lib/schedule: schedules fire inside the promotion path (takes, the timer
-- holder, job_promote), in the script that finds them due, so a fire is
-- consumed once however many members race for it.
-- J as in lib/job_keys, plus sched, sched_next, sched_data, members, stats.
-- (needs lib/jobs, lib/ready, lib/create)
--
-- A schedule's spec is JSON in `sched`, by name, with short keys:
--   v version (a digest of what the user asked), c cron expression | e every ms,
--   z time zone, a anchor ms (every), o overlap (1) or not (0), j the jobs'
--   options (as job_submit's), f buffered fire ms of a cron (ascending; computed
--   by clients, never here), b the last fire ever buffered, L the last fire
--   consumed, i the id of that fire's job, n the next fire ms (nil when a cron's
--   buffer ran out). `sched_next` holds the name by n (by L once the buffer ran
--   out, so the stall shows); its payload is in `sched_data`.

local REFILL_AT = 3     -- a cron buffer this low asks the caller for more fire times
local FIRE_LIMIT = 100  -- jobs one schedule creates per visit at most
local SCHED_VISITS = 32 -- due schedules one call visits at most

-- fire_id(name, at) -> the id of the job a fire creates: 'cron:<name>:<ms>'
local function fire_id(name, at)
  return 'cron:' .. name .. ':' .. string.format('%d', at)
end

-- refill_request(name, spec, now) -> the five fields a caller needs to compute
-- more fire times: name, version, cron, tz, the last buffered fire, and now
local function refill_request(name, spec, now)
  return {name, spec.v, spec.c, spec.z, string.format('%d', spec.b or spec.L or now),
    string.format('%d', now)}
end

-- owed_fires(spec, now, complete) -> the fire times due now (ascending, at most
-- FIRE_LIMIT, the latest kept), the oldest of them, and whether a cron buffer
-- must be resynced first. Advances the spec past them.
local function owed_fires(spec, now, complete)
  local due = {}
  if spec.e then
    if spec.n and spec.n <= now then
      local count = math.floor((now - spec.n) / spec.e) + 1
      for k = math.max(0, count - FIRE_LIMIT), count - 1 do
        due[#due + 1] = spec.n + k * spec.e
      end
      local oldest = spec.n
      spec.n = spec.n + count * spec.e
      return due, oldest, false
    end
    return due, nil, false
  end
  local buffered = spec.f
  if #buffered > 0 and buffered[#buffered] <= now and not complete then
    -- Every buffered fire is past: later ones may be missed too, and only a
    -- client can tell. Fire nothing until it resyncs the buffer.
    return due, nil, true
  end
  local rest = {}
  for _, at in ipairs(buffered) do
    if at <= now then
      due[#due + 1] = at
    else
      rest[#rest + 1] = at
    end
  end
  spec.f = rest
  spec.n = rest[1]
  if #due > FIRE_LIMIT then
    local kept = {}
    for i = #due - FIRE_LIMIT + 1, #due do
      kept[#kept + 1] = due[i]
    end
    return kept, due[1], false
  end
  return due, due[1], false
end

-- save_schedule(J, name, spec, now): the spec and its place in sched_next
local function save_schedule(J, name, spec, now)
  redis.call('HSET', J.sched, name, cjson.encode(spec))
  redis.call('ZADD', J.sched_next, spec.n or spec.L or now, name)
end

-- fire_schedule(J, name, now, grace, complete) -> jobs created, refill request or nil
--   Creates the jobs of the fires due now: each one when the oldest of them is
--   at most `grace` ms late, else only the latest (a schedule whose workers
--   were all down fires once on return). overlap=false skips a fire while the
--   previous fire's job is live. `complete`: the buffer was just refilled up to
--   now (job_sched_refill), so fire even when every buffered time is past.
local function fire_schedule(J, name, now, grace, complete)
  local raw = redis.call('HGET', J.sched, name)
  if not raw then
    redis.call('ZREM', J.sched_next, name)
    return 0, nil
  end
  local spec = cjson.decode(raw)
  local due, oldest, resync = owed_fires(spec, now, complete)
  if resync then
    return 0, refill_request(name, spec, now)
  end
  if #due > 1 and now - oldest > grace then
    due = {due[#due]}
  end
  local created, skipped = 0, 0
  local payload = nil
  for _, at in ipairs(due) do
    if at > (spec.L or -1) then
      spec.L = at
      local previous = spec.i and load_job(J.jobs, spec.i)
      if spec.o == 0 and previous and LIVE[previous.s] then
        skipped = skipped + 1
      else
        payload = payload or redis.call('HGET', J.sched_data, name) or ''
        local answer, new = create_job(J, fire_id(name, at), 'fire', payload, spec.j, now)
        spec.i = answer[1]
        if new then
          created = created + 1
        end
      end
    end
  end
  save_schedule(J, name, spec, now)
  stat(J.stats, 'cron_fired', created)
  stat(J.stats, 'cron_skipped', skipped)
  if spec.c and #spec.f <= REFILL_AT then
    return created, refill_request(name, spec, now)
  end
  return created, nil
end

-- fire_schedules(J, now, grace) -> jobs created (queued), refill requests (flat,
-- six fields each: see refill_request)
--   Visits at most SCHED_VISITS due schedules, and none while the queue has no
--   members: a schedule fires when someone can run it.
local function fire_schedules(J, now, grace)
  local created, refill = 0, {}
  if redis.call('SCARD', J.members) == 0 then
    return 0, refill
  end
  local names = redis.call('ZRANGEBYSCORE', J.sched_next, '-inf', now, 'LIMIT', 0, SCHED_VISITS)
  for _, name in ipairs(names) do
    local n, request = fire_schedule(J, name, now, grace, false)
    created = created + n
    if request then
      for _, field in ipairs(request) do
        refill[#refill + 1] = field
      end
    end
  end
  return created, refill
end

-- merge_fires(spec, fires) -> how many new fire times the buffer gained
--   The union of the buffer and `fires` (all of one spec: the same cron and
--   tz give the same times), past the last consumed fire, ascending.
local function merge_fires(spec, fires)
  local seen, merged, added = {}, {}, 0
  for _, at in ipairs(spec.f or {}) do
    seen[at] = true
    merged[#merged + 1] = at
  end
  for _, at in ipairs(fires) do
    if not seen[at] and at > (spec.L or -1) then
      seen[at] = true
      merged[#merged + 1] = at
      added = added + 1
    end
  end
  table.sort(merged)
  spec.f = merged
  if #merged > 0 and merged[#merged] > (spec.b or -1) then
    spec.b = merged[#merged]
  end
  spec.n = merged[1]
  return added
end
