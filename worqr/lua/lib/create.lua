-- lib/create: create one job by its id, the rule job_submit and a schedule's
-- fire share (job_flow_submit shares its parts: new_life, place_new).
-- The keys a script that creates jobs takes after the job keys (job_submit,
-- job_flow_submit, job_sched_set), a block (lib/job_keys) bound by create_keys(J, i):
--   +0  processes  hash  process id -> entry (a task queue's: its tasks)
--   +1  members    set   workers of this queue
--   +2  idle       set   members waiting for work
--   +3  config     hash  per-queue options; 'kind' is 'jobs' on a job queue
--   +4  stats      hash  lifetime counters of the queue, by event
--!include jobs
--!include counters
--!include group
--!include job_log

-- create_keys(J, first): KEYS[first..first+4] in J
local function create_keys(J, first)
  J.processes = KEYS[first]
  J.members = KEYS[first + 1]
  J.idle = KEYS[first + 2]
  J.config = KEYS[first + 3]
  J.stats = KEYS[first + 4]
end

-- new_life(J, id, old) -> life, entry: a new life of job `id`, the queue's next
--   number; the old one (a terminal record, or nil) ends: out of its index, its
--   result, progress and log gone, no longer counted
local function new_life(J, id, old)
  if old then
    redis.call('ZREM', J[state_name(old.s)], id)
    redis.call('HDEL', J.result, id)
    redis.call('HDEL', J.progress, id)
    drop_log(J, id)
    tally(J, old.s, -1)
  end
  local life = redis.call('INCR', J.seq)
  return life, entry_of(id, life)
end

-- place_new(J, record, entry, due, now): a new life, delayed until `due` or queued
local function place_new(J, record, entry, due, now)
  if due > now then
    record.s = 'd'
    record.v = due
    redis.call('ZADD', J.delayed, due, entry)
  else
    record.s = 'q'
    record.v = now
    make_ready(J, record, entry, false)
  end
end

-- create_job(J, id, nonce, payload, options, now) -> {id, created, state}, new, entry
--   (new: true when this call wrote the job, entry its id#life)
--   A resend of the same call (same nonce) answers as the first call did; a live
--   job with this id (or, with a unique marker, with this payload) makes this one
--   a duplicate (created 0, the live job's id) and nothing is written; a
--   terminal one starts a new life. The job is queued (due now) or delayed.
--   options: d delay ms | A at ms, P priority, u unique marker, R retries,
--   B backoff, T timeout ms, k result ttl ms, G group (lib/group), tp ts the
--   submit's trace context (W3C traceparent, tracestate: the record keeps them); from
--   lib/dedup, which rules on its marker itself: U a dedup key's mode (u its
--   marker, which then names this job), w waiting (a keep_last follow-up: the
--   marker names it once it is placed).
local function create_job(J, id, nonce, payload, options, now)
  local record = load_job(J.jobs, id)
  if record and record.n == nonce then
    return {id, 1, record.s}  -- a resend: what the first call did
  elseif is_live(record) then
    return {id, 0, record.s}
  elseif options.u and not options.U then
    local holder = redis.call('HGET', J.unique, options.u)
    if holder then
      local other, life = split_entry(holder)
      local held = load_job(J.jobs, other)
      if is_live(held, life) then
        return {other, 0, held.s}
      end
    end
  end
  local life, entry = new_life(J, id, record)
  record = {
    l = life, n = nonce, c = now, a = 0, f = 0, r = 0, P = options.P or 0,
    R = options.R, B = options.B, T = options.T, k = options.k, u = options.u, G = options.G,
    U = options.U, tp = options.tp, ts = options.ts,
  }
  redis.call('HSET', J.data, id, payload)
  local due = options.A or (now + (options.d or 0))
  if options.w then
    record.s = 'w'
    record.v = due  -- from when it is placed (lib/terminal)
    redis.call('ZADD', J.waiting, now, id)
  else
    if options.u then
      redis.call('HSET', J.unique, options.u, entry)
    end
    place_new(J, record, entry, due, now)
    group_move(J, record, nil, record.s, now)  -- (a group counts no waiting job)
  end
  tally(J, record.s, 1)
  save_job(J.jobs, id, record)
  return {id, 1, record.s}, true, entry
end
