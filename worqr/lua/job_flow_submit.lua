-- job_flow_submit: create jobs of a flow, each once: a chain's step, a flow's
--   root, a parent's child. Idempotent per job: 's:<id>' in job_applied says the
--   job was created here (or blocked by a cancel) and nothing is done again, even
--   after the job ended and was purged; a live job with the id is left alone. A
--   job with children starts 'waiting' and writes one outbox operation per child
--   (its submit); the others are queued, or delayed, as job_submit makes them.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16..20] create_keys the queue's keys for creating jobs (lib/create)
-- KEYS[21] job_applied   zset    's:<id>' of flow jobs created or blocked -> forget ms
-- KEYS[22..27] flow_keys the queue's flow keys (lib/flow)
-- Keys named by data: the queue's group keys (lib/group) and job logs (lib/job_log),
--   all in its slot ({P:Q}).
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
--!include clock
--!include job_keys
--!include flow
--!include kind
--!include jobs
--!include counters
--!include create
--!include announce
local J = job_keys()
create_keys(J, 16)
local job_applied = KEYS[21]
flow_keys(J, 22)
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local policy = cjson.decode(ARGV[3])
local queue = ARGV[4]
local first_job = 5  -- ARGV[5..n] jobs

-- wait_for(record, id, entry, flow, now): a parent waits for its children, each
--   submitted through the outbox (one operation per child)
local function wait_for(record, id, entry, flow, now)
  local children = flow.c
  record.s = 'w'
  record.cn, record.ch, record.cf, record.cq = #children, #children, flow.f or 'fail', {}
  redis.call('ZADD', J.waiting, now, id)
  for k, child in ipairs(children) do
    record.cq[k] = child.q
    local header = {
      k = 'submit', q = child.q, i = child.i, p = child.p, o = child.o, g = flow.g,
      pq = queue, pi = id, pl = record.l, pn = k - 1, f = child.f, c = child.c,
    }
    put_op(J, entry .. ':child:' .. (k - 1), header, '', now, policy)
  end
end

local refused = claim_kind(J.config, 'jobs', J.tasks, J.processes)
if refused then
  return refused
end
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
  local record = load_job(J.jobs, id)
  if redis.call('ZSCORE', job_applied, member) then
    created[#created + 1], created[#created + 2] = 0, ''
  elseif is_live(record) then
    redis.call('ZADD', job_applied, now + policy.applied_ttl, member)
    created[#created + 1], created[#created + 2] = 0, record.s
  else
    local life, entry = new_life(J, id, record)
    record = {
      l = life, n = member, c = now, a = 0, f = 0, r = 0, P = options.P or 0,
      R = options.R, B = options.B, T = options.T, k = options.k,
      g = flow.g, nx = flow.nx, pq = flow.pq, pi = flow.pi, pl = flow.pl, pn = flow.pn,
      tp = options.tp, ts = options.ts,
    }
    redis.call('HSET', J.data, id, payload)
    if type(flow.c) == 'table' and #flow.c > 0 then
      wait_for(record, id, entry, flow, now)
    else
      place_new(J, record, entry, options.A or (now + (options.d or 0)), now)
      if record.s == 'd' then
        delayed = delayed + 1
      else
        ready = ready + 1
      end
    end
    tally(J, record.s, 1)
    save_job(J.jobs, id, record)
    redis.call('ZADD', J.flow_live, now, id)
    redis.call('ZADD', job_applied, now + policy.applied_ttl, member)
    submitted = submitted + 1
    created[#created + 1], created[#created + 2] = 1, record.s
  end
end

stat(J, 'submitted', submitted)
announce(J, ready, delayed, now, wake_prefix, publish, policy.timer_grace)
return {created, J.ops}
