-- lib/schedule: schedules fire inside the promotion path (takes, the timer
-- holder, job_promote), in the script that finds them due, so a fire is
-- consumed once however many members race for it.
-- J as in lib/job_keys, plus the schedule keys, J.members and J.stats.
--
-- A schedule's spec is JSON in `sched`, by name, with short keys:
--   v version (a digest of what the user asked), c cron expression | e every ms,
--   z time zone, a anchor ms (every), o overlap (1) or not (0), j the jobs'
--   options (as job_submit's), f buffered fire ms of a cron (ascending; computed
--   by clients, never here), b the last fire ever buffered, L the last fire
--   consumed, i the id of that fire's job, n the next fire ms (nil when a cron's
--   buffer ran out), p 1 while paused (job_sched_pause: it fires nothing and an
--   upsert keeps it). `sched_next` holds the name by n (by L once the buffer ran
--   out, so the stall shows), unless it is paused; its payload is in `sched_data`.
-- The schedule keys, a block (lib/job_keys) bound by sched_keys(J, i):
--   +0  job_sched       hash  schedule name -> spec
--   +1  job_sched_next  zset  schedule names by next fire ms
--   +2  job_sched_data  hash  schedule name -> payload of its jobs
--!include jobs
--!include counters
--!include create

local REFILL_AT = 3     -- a cron buffer this low asks the caller for more fire times
local FIRE_LIMIT = 100  -- jobs one schedule creates per visit at most
local SCHED_VISITS = 32 -- due schedules one call visits at most

-- sched_keys(J, first): KEYS[first..first+2] in J
local function sched_keys(J, first)
  J.sched = KEYS[first]
  J.sched_next = KEYS[first + 1]
  J.sched_data = KEYS[first + 2]
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

-- load_schedule(J, name) -> the schedule's spec, or nil when there is none
local function load_schedule(J, name)
  local raw = redis.call('HGET', J.sched, name)
  return raw and cjson.decode(raw) or nil
end

-- save_schedule(J, name, spec, now): the spec and its place in sched_next (none
--   while paused: no visit finds it due, no timer waits for it)
local function save_schedule(J, name, spec, now)
  redis.call('HSET', J.sched, name, cjson.encode(spec))
  if spec.p then
    redis.call('ZREM', J.sched_next, name)
  else
    redis.call('ZADD', J.sched_next, spec.n or spec.L or now, name)
  end
end

-- fire_schedule(J, name, now, grace, complete) -> jobs created, refill request or nil
--   Creates the jobs of the fires due now: each one when the oldest of them is
--   at most `grace` ms late, else only the latest (a schedule whose workers
--   were all down fires once on return). overlap=false skips a fire while the
--   previous fire's job is live. `complete`: the buffer was just refilled up to
--   now (job_sched_refill), so fire even when every buffered time is past.
local function fire_schedule(J, name, now, grace, complete)
  local spec = load_schedule(J, name)
  if not spec then
    redis.call('ZREM', J.sched_next, name)
    return 0, nil
  end
  if spec.p then
    return 0, nil  -- paused after a refill was asked for (job_sched_refill)
  end
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
      if spec.o == 0 and is_live(previous) then
        skipped = skipped + 1
      else
        payload = payload or redis.call('HGET', J.sched_data, name) or ''
        local id = 'cron:' .. name .. ':' .. string.format('%d', at)  -- the fire's job
        local answer, new = create_job(J, id, 'fire', payload, spec.j, now)
        spec.i = answer[1]
        if new then
          created = created + 1
        end
      end
    end
  end
  save_schedule(J, name, spec, now)
  stat(J, 'cron_fired', created)
  stat(J, 'cron_skipped', skipped)
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
