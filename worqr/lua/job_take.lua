-- job_take: finish a batch of this worker's jobs of one queue, storing their
--   results, and take up to `count` more, in one call (a worker's steady state).
--   On the way: purge expired records, promote due jobs, fire due schedules,
--   tell the next timer.
-- KEYS[1] tasks          list    ready entries at priority 0; the right end is the front
-- KEYS[2] job_prio       zset    ready entries with a priority
-- KEYS[3] job_seq        string  lives and priority order
-- KEYS[4] jobs           hash    id -> record
-- KEYS[5] job_data       hash    id -> payload
-- KEYS[6] job_result     hash    id -> result
-- KEYS[7] job_progress   hash    id -> last progress value
-- KEYS[8] job_delayed    zset    delayed entries by due ms
-- KEYS[9] job_retrying   zset    retrying entries by due ms
-- KEYS[10] job_finished  zset    finished ids by purge ms
-- KEYS[11] job_failed    zset    failed ids by purge ms
-- KEYS[12] job_cancelled zset    cancelled ids by purge ms
-- KEYS[13] job_unique    hash    unique marker -> id#life
-- KEYS[14] job_counts    hash    state -> count
-- KEYS[15] job_timer     hash    the member told when due work comes next
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] owned         zset    this worker's process ids on this queue, score = seq
-- KEYS[18] members       set     workers allowed to take from this queue
-- KEYS[19] idle          set     members waiting for work
-- KEYS[20] seq           string  per-queue take counter (orders `owned`)
-- KEYS[21] config        hash    per-queue options; 'kind' is 'jobs'; limits (lib/limit)
-- KEYS[22] stats         hash    lifetime counters of the queue, by event
-- KEYS[23] job_sched     hash    schedule name -> spec (lib/schedule)
-- KEYS[24] job_sched_next zset   schedule names by next fire ms
-- KEYS[25] job_sched_data hash   schedule name -> payload of its jobs
-- KEYS[26] job_outbox    zset    operations for other queues -> when a relay may take them
-- KEYS[27] job_outbox_data hash  operation id -> header JSON
-- KEYS[28] job_outbox_body hash  operation id -> body (a result passed on)
-- KEYS[29] job_flow      hash    parent#life|i -> child i's outcome
-- KEYS[30] job_waiting   zset    flow parents waiting for their children
-- KEYS[31] job_flow_live zset    live flow jobs of this queue -> created ms (lib/flow)
-- ARGV[1] worker            the worker's id
-- ARGV[2] pid_prefix        client-chosen, unique per call; new process i is pid_prefix .. i
-- ARGV[3] count             how many jobs to take at most (>= 0; 0 only finishes)
-- ARGV[4] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[5] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[6] notify            the queue's channel for waiters
-- ARGV[7] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[8..n] finishes       four per finished job: pid, entry, result type (s, b, n), result
-- Reply: {finished, taken, more, refill, ops, now}. finished: one integer per finish,
--   in order: 1 accepted, 0 fenced (the process no longer existed: failed over,
--   cancelled, deleted), 2 already finished by this same pid (a resend). taken:
--   flat array, five per job: pid, entry, payload, the JSON field of the job's record
--   (lib/jobs: f failures, r recoveries, v available ms, R retries, B backoff, T
--   timeout ms; a flow parent's cq children's queues, cf failure policy), and this
--   attempt's number.
--   now: the server's ms this call ran at. more: 1 when the take
--   stopped at the skip budget with jobs maybe left (call again). refill: cron
--   schedules low on fire times, six fields each (name, version, cron, tz, last
--   buffered ms, now ms): compute more, send job_sched_refill. ops: flat, three per
--   outbox operation the finishes wrote (lib/flow): op id, header, body.
--   Resending the same call finishes nothing twice and returns what it took.
-- Errors: WORQR_NOT_MEMBER when count > 0 and the worker is not (or no longer) a
--   member (nothing is finished then: resend with count 0); WORQR_TASK_QUEUE when
--   the queue holds tasks.
-- Events: 'done:<id>' on notify for a finished job someone waits for; 'work:<n>'
--   to idle workers for promoted (or fired) jobs this call does not take, and to one
--   idle worker when this call's finishes free room under max_active that it does not
--   take; 'due:<ms>' to the member told when due work comes next (a rate limit's
--   reopening included).
--!include publish
--!include wake
--!include jobs
--!include ready
--!include flow
--!include terminal
--!include promote
--!include create
--!include schedule
--!include take
--!include kind
--!include limit
--!include job_keys
local processes = KEYS[16]
local owned = KEYS[17]
local members = KEYS[18]
local idle = KEYS[19]
local seq = KEYS[20]
local config = KEYS[21]
local stats = KEYS[22]
local job_sched = KEYS[23]
local job_sched_next = KEYS[24]
local job_sched_data = KEYS[25]
local job_outbox = KEYS[26]
local job_outbox_data = KEYS[27]
local job_outbox_body = KEYS[28]
local job_flow = KEYS[29]
local job_waiting = KEYS[30]
local job_flow_live = KEYS[31]
local worker = ARGV[1]
local pid_prefix = ARGV[2]
local count = tonumber(ARGV[3])
local wake_prefix = ARGV[4]
local publish = publish_command(ARGV[5])
local notify = ARGV[6]
local policy = cjson.decode(ARGV[7])
local first_finish = 8  -- ARGV[8..n] finishes
J.members, J.idle, J.stats, J.notify = members, idle, stats, notify
J.sched, J.sched_next, J.sched_data = job_sched, job_sched_next, job_sched_data
J.outbox, J.outbox_data, J.outbox_body = job_outbox, job_outbox_data, job_outbox_body
J.flow, J.waiting, J.flow_live = job_flow, job_waiting, job_flow_live


-- held(pid, entry) -> the five reply fields of a job this worker holds (a resend's reply)
local function held(pid, entry)
  local id = split_entry(entry)
  local raw = redis.call('HMGET', jobs, id, hot_field(id))
  local hot = raw[2] and parse_hot(raw[2])
  return pid, entry, redis.call('HGET', job_data, id) or '', raw[1] or '{}', hot and hot.a or 0
end

local resent = count > 0 and already_taken(processes, pid_prefix, 0)
if count > 0 and not resent then
  if redis.call('SISMEMBER', members, worker) == 0 then
    return redis.error_reply('WORQR_NOT_MEMBER')
  end
  local refused = make_job_queue(config, tasks, processes)
  if refused then
    return refused
  end
end
local limits = read_limits(config)
local micros = now_us()  -- one clock reading: start times and the rate agree to the µs
local now = math.floor(micros / 1000)
buffer_counters()  -- counts and stats: one HINCRBY per field at the end (flush_counters)

-- Finishes. The processes' entries and the jobs' hot fields are read in one call
-- each; the ended processes leave `owned` and `processes` in one call each, and
-- results and hot fields are stored in one call each, after the loop (a flow's
-- job stores its result first: its hop passes the result on). A plain job (lib/jobs)
-- ends on its hot fields alone; any other is loaded and saved whole.
local finished = {}
local done = 0
local ended = {}
local ended_now = {}  -- pid -> true: a pid sent twice in one call is a resend
local stored, unstored, hots, purges = {}, {}, {}, {}
local pids, finish_ids, finish_lives, hot_fields = {}, {}, {}, {}
for i = first_finish, #ARGV, 4 do
  local k = #pids + 1
  pids[k] = ARGV[i]
  finish_ids[k], finish_lives[k] = entry_parts(ARGV[i + 1])
  hot_fields[k] = hot_field(finish_ids[k])
end
local entries_now = #pids > 0 and redis.call('HMGET', processes, unpack(pids)) or {}
local hots_now = #pids > 0 and redis.call('HMGET', jobs, unpack(hot_fields)) or {}
local now_text = string.format('%d', now)
local plain_purge = nil  -- every plain finish of this call has the same purge time
for k = 1, #pids do
  local i = first_finish + 4 * (k - 1)
  local pid, entry, kind, value = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local id, life = finish_ids[k], finish_lives[k]
  local state, hot_life, kept, is_plain, hot_pid = nil, nil, nil, nil, nil
  if hots_now[k] then
    state, hot_life, kept, is_plain, hot_pid = hot_parts(hots_now[k])
  end
  if ended_now[pid] then
    finished[#finished + 1] = 2
  elseif entries_now[k] ~= entry then
    local again = state == 'f' and hot_life == life and hot_pid == pid
    finished[#finished + 1] = again and 2 or 0
  else
    ended_now[pid] = true
    ended[#ended + 1] = pid
    if is_plain == '1' then  -- lib/jobs: no flow, so its result is stored after the loop
      if kind == 'n' then
        unstored[#unstored + 1] = id
      else
        stored[#stored + 1], stored[#stored + 2] = id, value
      end
      local purge_at = mark_ended(J, {s = state}, 'f', now, policy)
      plain_purge = plain_purge or string.format('%d', purge_at)
      purges[#purges + 1], purges[#purges + 2] = purge_at, id
      hots[#hots + 1] = hot_field(id)
      hots[#hots + 1] = finished_hot(hot_life, kept, now_text, plain_purge, kind, hot_pid)
    else
      local record = load_job(jobs, id)
      if record.g then
        if kind == 'n' then
          redis.call('HDEL', job_result, id)
        else
          redis.call('HSET', job_result, id, value)
        end
      elseif kind == 'n' then
        unstored[#unstored + 1] = id
      else
        stored[#stored + 1], stored[#stored + 2] = id, value
      end
      record.y = kind
      record.E = nil
      end_job(J, id, record, 'f', now, policy, publish)
      save_job(jobs, id, record)
    end
    done = done + 1
    finished[#finished + 1] = 1
  end
end
if done > 0 then
  redis.call('ZREM', owned, unpack(ended))
  redis.call('HDEL', processes, unpack(ended))
end
if #hots > 0 then
  redis.call('HSET', jobs, unpack(hots))
  redis.call('ZADD', job_finished, unpack(purges))
end
if #stored > 0 then
  redis.call('HSET', job_result, unpack(stored))
end
if #unstored > 0 then
  redis.call('HDEL', job_result, unpack(unstored))  -- a result of an earlier life
end

if resent then
  local taken = {}
  for i = 1, count do
    local pid = pid_prefix .. i
    local entry = redis.call('HGET', processes, pid)
    if not entry then break end
    local a, b, c, d, e = held(pid, entry)
    local n = #taken
    taken[n + 1], taken[n + 2], taken[n + 3], taken[n + 4], taken[n + 5] = a, b, c, d, e
  end
  flush_counters()
  return {finished, taken, 0, {}, FLOW_OPS, now}
end

-- A finishing take purges twice what it finishes (amortised O(1)); one that
-- finishes nothing (an idle member's poll, a wake-up) has time to spare and
-- purges a larger bounded batch, so an idle queue's backlog goes within a poll.
purge(J, now, done > 0 and math.max(policy.purge_budget, 2 * done) or policy.idle_purge, policy)
local timed = redis.call('EXISTS', job_delayed, job_retrying, job_sched_next) > 0
local promoted = 0
local refill = {}
if timed then
  promoted = promote(J, now, policy.promote_chunk)
  local fired
  fired, refill = fire_schedules(J, now, policy.misfire_grace)
  promoted = promoted + fired
end

-- How many may start: all asked for, unless the queue's limits say fewer (the
-- finishes above already freed their room under max_active).
local allowed = count
if limits and count > 0 then
  allowed, J.reopen = allowance(limits, job_counts, micros, count)
end

-- Takes, a chunk of entries at a time: the records read in one HMGET, and the
-- records, processes, `owned` and payloads written and read in one call each after
-- the loop (nothing in the loop reads what they write).
local got = 0
local skipped = 0
local more = 0
local records, spawned, taken_ids, taken_entries, taken_attempts = {}, {}, {}, {}, {}
local taken_now = {}  -- id -> true: an id is taken once per call whatever the entries say
while got < allowed and more == 0 do
  local entries = pop_ready_many(tasks, job_prio, allowed - got)
  if not entries then break end
  local ids, lives, fields = {}, {}, {}
  for k, entry in ipairs(entries) do
    ids[k], lives[k] = entry_parts(entry)
    fields[k] = hot_field(ids[k])
  end
  local raws = redis.call('HMGET', jobs, unpack(fields))
  for k, entry in ipairs(entries) do
    local id = ids[k]
    local pid = pid_prefix .. (got + 1)
    local hot, attempt = nil, nil
    if raws[k] and not taken_now[id] then
      hot, attempt = started_hot(raws[k], lives[k], now_text, pid)
    end
    if hot then
      taken_now[id] = true
      got = got + 1
      move(job_counts, 'q', 'a')
      records[#records + 1], records[#records + 2] = fields[k], hot
      spawned[#spawned + 1], spawned[#spawned + 2] = pid, entry
      taken_ids[got], taken_entries[got], taken_attempts[got] = id, entry, attempt
    else
      -- A tombstone (cancelled while queued) or an entry of an older life.
      skipped = skipped + 1
    end
  end
  if skipped >= policy.skip_budget then
    more = 1
  end
end
local taken = {}
if got > 0 then
  redis.call('HSET', jobs, unpack(records))
  redis.call('HSET', processes, unpack(spawned))
  local last = redis.call('INCRBY', seq, got)
  local ranked = {}
  for k = 1, got do
    ranked[2 * k - 1], ranked[2 * k] = last - got + k, pid_prefix .. k
  end
  redis.call('ZADD', owned, unpack(ranked))
  local payloads = redis.call('HMGET', job_data, unpack(taken_ids))
  local colds = redis.call('HMGET', jobs, unpack(taken_ids))
  for k = 1, got do
    local n = #taken
    taken[n + 1], taken[n + 2], taken[n + 3] = pid_prefix .. k, taken_entries[k], payloads[k] or ''
    taken[n + 4], taken[n + 5] = colds[k] or '{}', taken_attempts[k]
  end
end
stat(stats, 'started', got)
if limits then
  if got > 0 then
    J.reopen = spend(config, limits, got, micros) or J.reopen
  end
  if J.reopen and not has_ready(tasks, job_prio) then
    J.reopen = nil  -- nothing waits for the reopening: the next submit wakes a taker
  end
end

if count > 0 then
  -- A worker that drained the queue wants a wake-up; one that got a full batch does not.
  if got < count and more == 0 then
    redis.call('SADD', idle, worker)
  else
    redis.call('SREM', idle, worker)
  end
end
local extra = promoted - got
if limits then
  if count == 0 and done > 0 and limits.max_active and has_ready(tasks, job_prio) then
    extra = math.max(extra, 1)  -- room this call freed under max_active and does not take
  end
  if extra > 0 then
    extra = allowance(limits, job_counts, micros, extra)  -- no herd (spend moved limits.tat)
  end
end
if extra > 0 then
  wake_idle(idle, wake_prefix, publish, extra)
end
if timed or J.reopen then
  arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
end
flush_counters()
return {finished, taken, more, refill, FLOW_OPS, now}
