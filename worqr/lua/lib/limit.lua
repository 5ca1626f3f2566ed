-- lib/limit: a job queue's traffic limits, kept in its config hash (job_limits sets them).
--   'rate' n and 'per' ms: at most n starts in any window of `per` ms, on Redis's
--   clock, spread evenly. Each start takes the next slot of a schedule ('tat', in
--   microseconds: the next free slot); a start may run up to SLACK of the window
--   late on its slot without losing it (a worker is never exactly on time), and the
--   slots are spaced (per + slack) / n apart so that even then no window of `per`
--   holds more than n starts: the long-run rate is n / 1.01 per window when work waits.
--   'max_active': at most that many active jobs; 'shut' ms: closed until then (a
--   handler raised RateLimited); 'paused' (job_pause, job_resume): nothing starts
--   until it is removed. A queue with none of them costs one HMGET. The same HMGET
--   reads 'groups' (lib/group: the queue has groups, in that epoch) and the defaults
--   of every group, 'group_rate' n per 'group_per' ms and 'group_max_active'.
--!include counters

local SLACK = 0.01  -- of the window

-- read_limits(J, config) -> L {rate, per, max_active, tat, shut, paused}, or nil
--   when the queue has none; and G {rate, per, max_active, epoch} (the groups'
--   defaults and epoch), or nil when the queue has no groups. Sets J.grouped and
--   J.gepoch from the same HMGET, so lib/group's grouped(J) reads nothing more,
--   and J.kind (false: none), which lib/admit passes on to lib/kind.
local function read_limits(J, config)
  local f = redis.call('HMGET', config, 'rate', 'per', 'max_active', 'tat', 'shut', 'paused',
    'groups', 'group_rate', 'group_per', 'group_max_active', 'kind')
  J.kind = f[11]
  local G = nil
  if f[7] then
    G = {rate = tonumber(f[8]), per = tonumber(f[9]), max_active = tonumber(f[10]),
      epoch = f[7]}
  end
  J.grouped, J.gepoch = G ~= nil, f[7] or nil
  if not (f[1] or f[3] or f[5] or f[6]) then
    return nil, G
  end
  return {
    rate = tonumber(f[1]), per = tonumber(f[2]), max_active = tonumber(f[3]),
    tat = tonumber(f[4]), shut = tonumber(f[5]), paused = f[6] and true or nil,
  }, G
end

-- now_us() -> the server's time in microseconds (the rate's clock)
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- rate_slots(L, now_micros) -> the first free slot (µs, never before now - slack) and
--   the spacing of slots (µs)
local function rate_slots(L, now_micros)
  local slack = L.per * 1000 * SLACK
  local spacing = (L.per * 1000 + slack) / L.rate
  return math.max(L.tat or 0, now_micros - slack), spacing
end

-- has_ready(tasks, prio) -> whether the queue has a job ready to start
local function has_ready(tasks, prio)
  return redis.call('LLEN', tasks) > 0 or redis.call('ZCARD', prio) > 0
end

-- allowance(J, L, now_micros, want) -> how many jobs may start now (<= want: all
--   without limits, L nil), and the ms at which a queue closed by time opens again
--   (nil: open, or closed until an active job ends or the queue is resumed)
local function allowance(J, L, now_micros, want)
  if not L or want <= 0 then
    return want, nil
  end
  if L.paused then
    return 0, nil  -- until job_resume, which wakes idle workers for the ready jobs
  end
  if L.shut and L.shut * 1000 > now_micros then
    return 0, L.shut
  end
  local n = want
  if L.max_active then
    local active = counters(J, J.counts, {'active'})[1]
    n = math.min(n, math.max(0, L.max_active - active))
  end
  if L.rate and n > 0 then
    local slot, spacing = rate_slots(L, now_micros)
    if slot > now_micros then
      return 0, math.ceil(slot / 1000)
    end
    n = math.min(n, math.floor((now_micros - slot) / spacing) + 1)  -- the slots already due
  end
  return n, nil
end

-- spend(J, L, started, now_micros): `started` jobs took the rate's next slots (L
--   follows); J.reopen, the next slot, stays while ready jobs wait for it
local function spend(J, L, started, now_micros)
  if L.rate and started > 0 then
    local slot, spacing = rate_slots(L, now_micros)
    L.tat = math.ceil(slot + started * spacing)
    redis.call('HSET', J.config, 'tat', string.format('%d', L.tat))
    J.reopen = math.ceil(L.tat / 1000)
  end
  if J.reopen and not J.grouped and not has_ready(J.tasks, J.prio) then
    J.reopen = nil
  end
end
