-- lib/jobs: job records, lives and counts.
-- A job's record is two fields of the `jobs` hash: `id` holds JSON with short
-- keys, and `id .. '\1'` (ids hold no control characters) its hot fields, the
-- ones a take and a plain finish change, as one short string (format_hot): a
-- worker's steady state parses and writes that string, never the JSON.
-- The keys, hot or not:
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
--   Hot: s l a t e X y p.
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

-- entry_parts(entry) -> id, life as text (the last '#' separates them: ids may
--   hold '#'); a hot string's life has the same digits
local function entry_parts(entry)
  return string.match(entry, '^(.*)#(%d+)$')
end

-- split_entry(entry) -> id, life
local function split_entry(entry)
  local id, life = entry_parts(entry)
  return id, tonumber(life)
end

-- hot_field(id) -> the `jobs` hash field of the job's hot fields
local function hot_field(id)
  return id .. '\1'
end

local HOT = {s = true, l = true, a = true, t = true, e = true, X = true, y = true, p = true}

-- plain(record) -> '1' when a finish needs no more than the hot fields: no
--   result ttl, unique marker, waiter, flow or last error to act on
local function plain(record)
  if record.k or record.u or record.w or record.g or record.E then
    return '0'
  end
  return '1'
end

local function digits(value)
  if value == nil then
    return ''
  end
  return string.format('%d', value)
end

-- format_hot(record, plain) -> 's<life>|a|t|e|X|y|plain|p' (p last: a pid may hold '|')
local function format_hot(record, is_plain)
  return record.s .. digits(record.l) .. '|' .. digits(record.a or 0) .. '|' .. digits(record.t)
    .. '|' .. digits(record.e) .. '|' .. digits(record.X) .. '|' .. (record.y or '') .. '|'
    .. is_plain .. '|' .. (record.p or '')
end

-- parse_hot(raw) -> the hot fields as a record table (and .plain), or nil
local function parse_hot(raw)
  local s, l, a, t, e, X, y, is_plain, p =
    string.match(raw, '^(%a)(%d+)|(%d+)|(%d*)|(%d*)|(%d*)|(%a?)|([01])|(.*)$')
  if not s then
    return nil
  end
  return {
    s = s, l = tonumber(l), a = tonumber(a), t = tonumber(t), e = tonumber(e),
    X = tonumber(X), y = y ~= '' and y or nil, p = p ~= '' and p or nil, plain = is_plain,
  }
end

-- The steady state's two edits of a hot string, without building a table. Lives
-- are compared as text: `entry_of` and format_hot write the same digits.

-- started_hot(raw, life, now_text, pid) -> the hot string of a queued job of
--   this life (text) started now, and its attempt; nil when it is not that
local function started_hot(raw, life, now_text, pid)
  local l, a, kept = string.match(raw, '^q(%d+)|(%d+)|%d*|(%d*|%d*|%a?|[01]|)')
  if l ~= life then
    return nil
  end
  local attempt = tonumber(a) + 1
  return 'a' .. l .. '|' .. string.format('%d', attempt) .. '|' .. now_text .. '|' .. kept .. pid,
    attempt
end

-- hot_parts(raw) -> state, life (text), 'attempts|started', plain, pid
local function hot_parts(raw)
  return string.match(raw, '^(%a)(%d+)|(%d+|%d*)|%d*|%d*|%a?|([01])|(.*)$')
end

-- finished_hot(life, kept, ended, purge_at, kind, pid) -> the hot string of a
--   plain job finished now (``kept`` the 'attempts|started' hot_parts gave)
local function finished_hot(life, kept, ended_text, purge_text, kind, pid)
  return 'f' .. life .. '|' .. kept .. '|' .. ended_text .. '|' .. purge_text .. '|' .. kind
    .. '|1|' .. pid
end

-- load_job(jobs, id) -> record table (both fields merged), or nil
local function load_job(jobs, id)
  local raw = redis.call('HMGET', jobs, id, hot_field(id))
  if not raw[1] then
    return nil
  end
  local record = cjson.decode(raw[1])
  local hot = raw[2] and parse_hot(raw[2])
  if hot then
    for key, value in pairs(hot) do
      if HOT[key] then
        record[key] = value
      end
    end
  end
  return record
end

-- save_job(jobs, id, record): both fields
local function save_job(jobs, id, record)
  local cold = {}
  for key, value in pairs(record) do
    if not HOT[key] then
      cold[key] = value
    end
  end
  redis.call(
    'HSET', jobs, id, cjson.encode(cold), hot_field(id), format_hot(record, plain(record))
  )
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

-- counters(hash, fields) -> their values in order, deferred increments included
--   (one HMGET)
local function counters(hash, fields)
  local raw = redis.call('HMGET', hash, unpack(fields))
  local pending = PENDING and PENDING[hash]
  local values = {}
  for i, field in ipairs(fields) do
    values[i] = tonumber(raw[i] or '0') + (pending and pending[field] or 0)
  end
  return values
end

-- counter(hash, field) -> its value, deferred increments included
local function counter(hash, field)
  return counters(hash, {field})[1]
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
