-- job_flow_submit: create jobs of a flow, each once: a chain's step, a flow's
--   root, a parent's child. Idempotent per job: 's:<id>' in job_applied says the
--   job was created here (or blocked by a cancel) and nothing is done again, even
--   after the job ended and was purged; a live job with the id is left alone. A
--   job with children starts 'waiting' and writes one outbox operation per child
--   (its submit); the others are queued, or delayed, as job_submit makes them.
-- KEYS[1] tasks          list    ready entries at priority 0 (push left, pop right)
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
-- KEYS[16] processes     hash    process id -> entry (a task queue's: its tasks)
-- KEYS[17] members       set     workers of this queue
-- KEYS[18] idle          set     members waiting for work
-- KEYS[19] config        hash    per-queue options; 'kind' is 'jobs' on a job queue
-- KEYS[20] stats         hash    lifetime counters of the queue, by event
-- KEYS[21] job_applied   zset    's:<id>' of flow jobs created or blocked -> forget ms
-- KEYS[22] job_outbox    zset    operations for other queues -> when a relay may take them
-- KEYS[23] job_outbox_data hash  operation id -> header JSON
-- KEYS[24] job_outbox_body hash  operation id -> body (a result passed on)
-- KEYS[25] job_waiting   zset    flow parents waiting for their children -> created ms
-- KEYS[26] job_flow_live zset    live flow jobs of this queue -> created ms (lib/flow)
-- ARGV[1] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[3] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[4] queue             this queue's name (children report to it)
-- ARGV[5..n] jobs           four per job: id, payload, options JSON (as job_submit's),
--                           flow JSON (g flow id; nx next steps; pq pi pl pn parent
--                           queue, id, life, index; f failure policy; c children:
--                           each {q, i, p, o, f, c}, p a base64 payload)
-- Reply: {created, ops}: created flat, two per job: 1 when this call created it
--   (else 0), and its state ('' when applied before); ops three per outbox
--   operation written (lib/flow): op id, header, body.
-- Errors: WORQR_TASK_QUEUE when the queue holds tasks (it is a task queue).
-- Events: 'work:<n>' to at most one idle worker per job queued now; 'due:<ms>' to
--   the member told when the next delayed job is due.
--!include publish
--!include wake
--!include jobs
--!include ready
--!include promote
--!include kind
--!include flow
--!include job_keys
local processes = KEYS[16]
local members = KEYS[17]
local idle = KEYS[18]
local config = KEYS[19]
local stats = KEYS[20]
local job_applied = KEYS[21]
local job_outbox = KEYS[22]
local job_outbox_data = KEYS[23]
local job_outbox_body = KEYS[24]
local job_waiting = KEYS[25]
local job_flow_live = KEYS[26]
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local policy = cjson.decode(ARGV[3])
local queue = ARGV[4]
local first_job = 5  -- ARGV[5..n] jobs
J.members, J.idle, J.stats = members, idle, stats
J.outbox, J.outbox_data, J.outbox_body, J.waiting = job_outbox, job_outbox_data, job_outbox_body, job_waiting
J.flow_live = job_flow_live

local refused = make_job_queue(config, tasks, processes)
if refused then
  return refused
end
local ended_index = {f = job_finished, x = job_failed, c = job_cancelled}
local now = now_ms()
local created = {}
local ready, delayed, submitted = 0, 0, 0

-- Applied operations are remembered for a day; forget a few expired ones per call.
local stale = redis.call('ZRANGEBYSCORE', job_applied, '-inf', now, 'LIMIT', 0, 100)
if #stale > 0 then
  redis.call('ZREM', job_applied, unpack(stale))
end

for i = first_job, #ARGV, 4 do
  local id, payload = ARGV[i], ARGV[i + 1]
  local options, flow = cjson.decode(ARGV[i + 2]), cjson.decode(ARGV[i + 3])
  local member = 's:' .. id
  local record = load_job(jobs, id)
  if redis.call('ZSCORE', job_applied, member) then
    created[#created + 1], created[#created + 2] = 0, ''
  elseif record and LIVE[record.s] then
    redis.call('ZADD', job_applied, now + policy.applied_ttl, member)
    created[#created + 1], created[#created + 2] = 0, record.s
  else
    if record then  -- terminal: its old life ends here
      redis.call('ZREM', ended_index[record.s], id)
      redis.call('HDEL', job_result, id)
      redis.call('HDEL', job_progress, id)
      tally(job_counts, record.s, -1)
    end
    local life = redis.call('INCR', job_seq)
    local entry = entry_of(id, life)
    local due = options.A or (now + (options.d or 0))
    record = {
      l = life, n = member, c = now, a = 0, f = 0, r = 0, P = options.P or 0,
      R = options.R, B = options.B, T = options.T, k = options.k,
      g = flow.g, nx = flow.nx, pq = flow.pq, pi = flow.pi, pl = flow.pl, pn = flow.pn,
    }
    redis.call('HSET', job_data, id, payload)
    local children = flow.c
    if type(children) == 'table' and #children > 0 then
      record.s = 'w'
      record.cn, record.ch, record.cf, record.cq = #children, #children, flow.f or 'fail', {}
      redis.call('ZADD', job_waiting, now, id)
      for k, child in ipairs(children) do
        record.cq[k] = child.q
        local header = {
          k = 'submit', q = child.q, i = child.i, p = child.p, o = child.o, g = flow.g,
          pq = queue, pi = id, pl = life, pn = k - 1, f = child.f, c = child.c,
        }
        put_op(J, entry .. ':child:' .. (k - 1), header, '', now, policy)
      end
    elseif due > now then
      record.s = 'd'
      record.v = due
      redis.call('ZADD', job_delayed, due, entry)
      delayed = delayed + 1
    else
      record.s = 'q'
      record.v = now
      push_ready(tasks, job_prio, job_seq, record, entry, false)
      ready = ready + 1
    end
    tally(job_counts, record.s, 1)
    save_job(jobs, id, record)
    redis.call('ZADD', job_flow_live, now, id)
    redis.call('ZADD', job_applied, now + policy.applied_ttl, member)
    submitted = submitted + 1
    created[#created + 1], created[#created + 2] = 1, record.s
  end
end

stat(stats, 'submitted', submitted)
if ready > 0 then
  wake_idle(idle, wake_prefix, publish, ready)
end
if delayed > 0 then
  arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
end
return {created, FLOW_OPS}
