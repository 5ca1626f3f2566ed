-- lib/jobs: job records, lives and states.
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
--   children: count, not yet reported, failure policy, their queues; tp ts the
--   submit's trace context (W3C traceparent, tracestate); lw la the worker whose
--   death last returned the job, and the attempt it was running.
--   Hot: s l a t e X y p.
-- Entries in the ready list, the priority and time zsets and `processes` are
-- `id#life`; lives come from the queue's job_seq and never repeat.

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

-- load_job(jobs, id, now) -> record table (both fields merged), or nil when there
--   is none or, given `now`, when it is past its purge time (retention is exact to
--   the ms, purged or not)
local function load_job(jobs, id, now)
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
  if now and record.X and record.X <= now then
    return nil
  end
  return record
end

-- save_job(jobs, id, record): both fields. The hot string says whether the job is
--   plain: whether a finish needs no more than its hot fields (no result ttl,
--   unique marker, waiter, flow or last error to act on).
local function save_job(jobs, id, record)
  local cold = {}
  for key, value in pairs(record) do
    if not HOT[key] then
      cold[key] = value
    end
  end
  redis.call(
    'HSET', jobs, id, cjson.encode(cold), hot_field(id),
    format_hot(record, (record.k or record.u or record.w or record.g or record.E or record.G) and '0' or '1')
  )
end

local LIVE = {d = true, q = true, a = true, r = true, w = true}

-- is_live(record, life) -> whether there is a record, not terminal (and of `life`)
local function is_live(record, life)
  return record ~= nil and (life == nil or record.l == life) and LIVE[record.s] == true
end
