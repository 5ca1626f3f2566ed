-- lib/jobs: job records, lives and counts.
-- A job's record is JSON in the `jobs` hash, with short keys:
--   l life, s state (d delayed, q queued, a active, r retrying, w waiting for
--   its children, f finished, x failed, c cancelled), n submit nonce, c created ms, v available ms (when it
--   became, or becomes, ready), t last start ms, e ended ms, X purge-at ms,
--   a attempts, f failures, r recoveries, p pid of the current or last attempt,
--   P priority, q order among prioritised jobs, R retries, B backoff, T timeout ms,
--   k result ttl ms, u unique marker, w a waiter watches it, E last error,
--   y result type (s, b, n), z nonce of the cancel call, b nonce of the retry call;
--   of a flow's jobs (lib/flow): g flow id, nx the chain's next steps, pq pi pl pn
--   the parent's queue, id, life and this child's index, cn ch cf cq a parent's
--   children: count, not yet reported, failure policy, their queues.
-- Entries in the ready list, the priority and time zsets and `processes` are
-- `id#life`; lives come from the queue's job_seq and never repeat.

-- now_ms() -> the server's time in milliseconds
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- entry_of(id, life) -> 'id#life'
local function entry_of(id, life)
  return id .. '#' .. life
end

-- split_entry(entry) -> id, life (the last '#' separates them: ids may hold '#')
local function split_entry(entry)
  local id, life = string.match(entry, '^(.*)#(%d+)$')
  return id, tonumber(life)
end

-- load_job(jobs, id) -> record table, or nil
local function load_job(jobs, id)
  local raw = redis.call('HGET', jobs, id)
  if raw then
    return cjson.decode(raw)
  end
  return nil
end

-- save_job(jobs, id, record)
local function save_job(jobs, id, record)
  redis.call('HSET', jobs, id, cjson.encode(record))
end

local STATE_NAMES = {
  d = 'delayed', q = 'queued', a = 'active', r = 'retrying', w = 'waiting',
  f = 'finished', x = 'failed', c = 'cancelled',
}
local LIVE = {d = true, q = true, a = true, r = true, w = true}

-- is_live(record, life) -> whether the record is of that life and not terminal
local function is_live(record, life)
  return record ~= nil and record.l == life and LIVE[record.s] == true
end

-- Counter increments a script defers (buffer_counters): key -> field -> delta, and
-- the order they came in (a script's writes must not depend on table order).
local PENDING = nil
local PENDING_ORDER = {}

-- buffer_counters(): from now on tally/stat add up in the script and write with
-- flush_counters(), one HINCRBY per field instead of one per change (a batch's hot
-- path). A script that calls it must flush before every return after a change.
local function buffer_counters()
  PENDING = {}
end

-- add(hash, field, delta): an HINCRBY now, or deferred (buffer_counters)
local function add(hash, field, delta)
  if delta == 0 then
    return  -- HINCRBY refuses "-0"
  end
  if not PENDING then
    redis.call('HINCRBY', hash, field, delta)
    return
  end
  local fields = PENDING[hash]
  if not fields then
    fields = {}
    PENDING[hash] = fields
  end
  if fields[field] == nil then
    PENDING_ORDER[#PENDING_ORDER + 1] = {hash, field}
    fields[field] = 0
  end
  fields[field] = fields[field] + delta
end

-- counter(hash, field) -> its value, deferred increments included
local function counter(hash, field)
  local value = tonumber(redis.call('HGET', hash, field) or '0')
  local fields = PENDING and PENDING[hash]
  return value + (fields and fields[field] or 0)
end

-- flush_counters(): write the deferred increments (in the order they came)
local function flush_counters()
  if not PENDING then
    return
  end
  for _, at in ipairs(PENDING_ORDER) do
    local delta = PENDING[at[1]][at[2]]
    if delta ~= 0 then
      redis.call('HINCRBY', at[1], at[2], delta)
    end
  end
  PENDING, PENDING_ORDER = {}, {}
end

-- tally(counts, state, delta): the per-state count
local function tally(counts, state, delta)
  add(counts, STATE_NAMES[state], delta)
end

-- move(counts, from, to): one job changed state
local function move(counts, from, to)
  tally(counts, from, -1)
  tally(counts, to, 1)
end

-- stat(stats, event, n): the queue's lifetime counter of an event
local function stat(stats, event, n)
  add(stats, event, n)
end
