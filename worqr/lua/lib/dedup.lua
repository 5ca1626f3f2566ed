-- lib/dedup: a submit with a dedup key (job_submit): options D the key, M the mode
-- (t throttle, b debounce, l keep_last), L a throttle's ttl ms. Each mode's
-- marker is a field of J.unique, '<mode name>:<key>' (unique markers are hex
-- digests, without ':'), in the queue's slot:
--   throttle   -> 'id#life|<until ms>': until then, from the submit that created
--              the job, submits create nothing and answer that job, whatever its
--              state. The job's end leaves it (the job's record has no u): it lives
--              its ttl. job_throttle holds the keys by expiry; every throttle
--              submit that creates forgets up to THROTTLE_SWEEP expired ones, so
--              the markers kept stay about those of one ttl.
--   debounce   -> 'id#life' of its job (record: u the field, U 'b'): while that
--              job is delayed or queued, a submit replaces its payload and options
--              and moves its due time (lib/change), answering it; once it runs, a
--              submit creates the next job. Released as unique markers are
--              (lib/terminal).
--   keep_last  as debounce (U 'l'), and while its job is active or retrying, the
--              first submit writes a follow-up job, waiting (the running job's
--              record N names it) until that job ends (lib/terminal); later submits
--              replace the follow-up's payload and options. Never two runs at once.
-- The dedup keys, a block (lib/job_keys) bound by dedup_keys(J, i):
--   +0  job_waiting   zset  waiting jobs (flow parents, follow-ups) -> created ms
--   +1  job_throttle  zset  throttle keys -> when their marker expires (ms)
--!include jobs
--!include counters
--!include create
--!include change

local MODES = {t = 'throttle', b = 'debounce', l = 'keep_last'}
local THROTTLE_SWEEP = 16  -- expired throttle markers forgotten per throttle that creates

-- dedup_keys(J, first): KEYS[first..first+1] in J
local function dedup_keys(J, first)
  J.waiting = KEYS[first]
  J.throttle = KEYS[first + 1]
end

-- live_entry(J, entry) -> the record of `entry` (id#life) when that life is live, and its id
local function live_entry(J, entry)
  if not entry then
    return nil
  end
  local id, life = split_entry(entry)
  local record = load_job(J.jobs, id)
  if is_live(record, life) then
    return record, id
  end
  return nil
end

-- throttle(J, id, nonce, payload, options, now, marker) -> reply, new, placed
local function throttle(J, id, nonce, payload, options, now, marker)
  local held = redis.call('HGET', J.unique, marker)
  local entry, till = string.match(held or '', '^(.*)|(%d+)$')
  if entry and tonumber(till) > now then
    local other = entry_parts(entry)
    local record = load_job(J.jobs, other)
    return {other, 0, record and record.s or ''}, false, nil
  end
  local expired = redis.call('ZRANGEBYSCORE', J.throttle, '-inf', now, 'LIMIT', 0, THROTTLE_SWEEP)
  if #expired > 0 then
    local fields = {}
    for i, key in ipairs(expired) do
      fields[i] = MODES.t .. ':' .. key
    end
    redis.call('ZREM', J.throttle, unpack(expired))
    redis.call('HDEL', J.unique, unpack(fields))
  end
  local reply, _, created = create_job(J, id, nonce, payload, options, now)
  till = now + options.L
  redis.call('HSET', J.unique, marker, created .. '|' .. till)
  redis.call('ZADD', J.throttle, till, options.D)
  return reply, true, reply[3]
end

-- replace(J, id, record, payload, options, now) -> reply, false, placed: a waiting
--   job of the key takes this submit's payload and options
local function replace(J, id, record, payload, options, now)
  redis.call('HSET', J.data, id, payload)
  record.R, record.B, record.T, record.k = options.R, options.B, options.T, options.k
  local due = options.A or (now + (options.d or 0))
  local placed = nil
  if record.s == 'w' then
    record.P = options.P or 0
    record.v = due  -- from when it is placed (lib/terminal)
  else
    local woken = change_job(J, id, record, options.P or 0, due, now)
    redis.call('HSET', J.unique, record.u, entry_of(id, record.l))
    placed = woken == 1 and 'q' or (record.s == 'd' and 'd') or nil
  end
  save_job(J.jobs, id, record)
  return {id, 0, record.s}, false, placed
end

local WAITING = {d = true, q = true}

-- dedup_once(J, id, nonce, payload, options, now): submit_deduped's answer
local function dedup_once(J, id, nonce, payload, options, now)
  local record = load_job(J.jobs, id)
  if record and (record.n == nonce or is_live(record)) then
    return create_job(J, id, nonce, payload, options, now), false, nil  -- it answers the id
  end
  local marker = MODES[options.M] .. ':' .. options.D
  if options.M == 't' then
    return throttle(J, id, nonce, payload, options, now, marker)
  end
  options.u, options.U = marker, options.M
  local held, held_id = live_entry(J, redis.call('HGET', J.unique, marker))
  if held and options.M == 'l' then
    local next, next_id = live_entry(J, held.N)
    if next and next.s == 'w' then
      return replace(J, next_id, next, payload, options, now)
    elseif not WAITING[held.s] then  -- it runs (or waits out a backoff): one follow-up
      options.w = true
      local reply, _, entry = create_job(J, id, nonce, payload, options, now)
      held.N = entry
      save_job(J.jobs, held_id, held)
      return reply, true, nil
    end
  end
  if held and WAITING[held.s] then
    return replace(J, held_id, held, payload, options, now)
  end
  local reply = create_job(J, id, nonce, payload, options, now)
  return reply, true, reply[3]
end

-- submit_deduped(J, id, nonce, payload, options, now) -> {id, created, state}, new,
--   placed: as create_job (lib/create), for a submit with a dedup key; placed 'q'
--   when a job was queued now, 'd' when a job's due time was set, else nil. A
--   duplicate counts in J.stats as 'deduplicated:<mode name>'.
local function submit_deduped(J, id, nonce, payload, options, now)
  local reply, new, placed = dedup_once(J, id, nonce, payload, options, now)
  if reply[2] == 0 then
    stat(J, 'deduplicated:' .. MODES[options.M], 1)
  end
  return reply, new, placed
end
