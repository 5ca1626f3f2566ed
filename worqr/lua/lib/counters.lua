-- lib/counters: a job queue's per-state counts and lifetime counters (J.stats):
-- an HINCRBY per change, or, after buffer_counters(J), one per field at the end.

-- A state's name ('f' -> 'finished') is its field in job_counts; a terminal
-- state's is also its stats event and its index in J (J.finished: job_finished).
local STATE_NAMES = {
  d = 'delayed', q = 'queued', a = 'active', r = 'retrying', w = 'waiting',
  f = 'finished', x = 'failed', c = 'cancelled',
}

-- state_name(state) -> the state's name
local function state_name(state)
  return STATE_NAMES[state]
end

-- buffer_counters(J): from now on changes add up in J.pending: key -> field ->
--   delta, and as its array part the {key, field} pairs in the order they came (a
--   script's writes must not depend on table order). Flush before every return
--   after a change.
local function buffer_counters(J)
  J.pending = {}
end

-- add(J, hash, field, delta): an HINCRBY now, or deferred (buffer_counters)
local function add(J, hash, field, delta)
  if delta == 0 then
    return  -- HINCRBY refuses "-0"
  end
  local pending = J.pending
  if not pending then
    redis.call('HINCRBY', hash, field, delta)
    return
  end
  local fields = pending[hash]
  if not fields then
    fields = {}
    pending[hash] = fields
  end
  if fields[field] == nil then
    pending[#pending + 1] = {hash, field}
    fields[field] = 0
  end
  fields[field] = fields[field] + delta
end

-- counters(J, hash, fields) -> their values in order, deferred changes included
--   (one HMGET)
local function counters(J, hash, fields)
  local raw = redis.call('HMGET', hash, unpack(fields))
  local pending = J.pending and J.pending[hash]
  local values = {}
  for i, field in ipairs(fields) do
    values[i] = tonumber(raw[i] or '0') + (pending and pending[field] or 0)
  end
  return values
end

-- flush_counters(J): write the deferred changes (in the order they came)
local function flush_counters(J)
  local pending = J.pending
  if not pending then
    return
  end
  for _, at in ipairs(pending) do
    local delta = pending[at[1]][at[2]]
    if delta ~= 0 then
      redis.call('HINCRBY', at[1], at[2], delta)
    end
  end
  J.pending = {}
end

-- tally(J, state, delta): the count of jobs in `state`
local function tally(J, state, delta)
  add(J, J.counts, STATE_NAMES[state], delta)
end

-- move(J, from, to): one job changed state
local function move(J, from, to)
  tally(J, from, -1)
  tally(J, to, 1)
end

-- stat(J, event, n): the queue's lifetime counter of an event
local function stat(J, event, n)
  add(J, J.stats, event, n)
end
