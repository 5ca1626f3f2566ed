-- job_fail: an attempt failed (the handler raised, asked for a retry or ran past
--   its timeout), or the job must fail now (worqr.Fail, a result that cannot be
--   stored). Fenced by process: a failure reported for a process that no longer
--   exists changes nothing.
-- KEYS[1] tasks          list    ready entries at priority 0
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
-- KEYS[17] owned         zset    the owning worker's process ids on this queue
-- KEYS[18] members       set     workers of this queue
-- KEYS[19] idle          set     members waiting for work
-- KEYS[20] stats         hash    lifetime counters of the queue, by event
-- KEYS[21] job_outbox    zset    operations for other queues -> when a relay may take them
-- KEYS[22] job_outbox_data hash  operation id -> header JSON
-- KEYS[23] job_outbox_body hash  operation id -> body (a result passed on)
-- KEYS[24] job_flow      hash    parent#life|i -> child i's outcome
-- KEYS[25] job_waiting   zset    flow parents waiting for their children
-- KEYS[26] job_flow_live zset    live flow jobs of this queue -> created ms (lib/flow)
-- KEYS[27] config        hash    per-queue options; 'shut' (lib/limit)
-- ARGV[1] pid
-- ARGV[2] entry             the job's id#life, as the take gave it
-- ARGV[3] mode              'error': a failure, retried while failures <= retries;
--                           'fail': failed now, no retry;
--                           'limited': not a failure (RateLimited): delayed by delay_ms,
--                           its attempt given back, and the queue shut as long
-- ARGV[4] delay_ms          the backoff before the retry (the worker drew its jitter)
-- ARGV[5] retries           the effective retries (record, handler or default)
-- ARGV[6] error_text        "<ExceptionType>: <message>", at most 1 KB
-- ARGV[7] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[8] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[9] notify            the queue's channel for waiters
-- ARGV[10] policy           JSON: retention and budgets in ms (JobSettings.policy)
-- Reply: {accepted, state, ops}: accepted 1, and the job's state now ('r'
--   retrying, 'x' failed or 'd' delayed); 0 and '' when the process no longer existed (fenced).
--   ops (when it failed): three per outbox operation written (lib/flow).
-- Errors: none.
-- Events: 'done:<id>' on notify when the job failed and someone waits for it;
--   'due:<ms>' to the member told when due work comes next.
--!include publish
--!include jobs
--!include ready
--!include flow
--!include terminal
--!include promote
--!include end_process
--!include job_keys
local processes = KEYS[16]
local owned = KEYS[17]
local members = KEYS[18]
local idle = KEYS[19]
local stats = KEYS[20]
local job_outbox = KEYS[21]
local job_outbox_data = KEYS[22]
local job_outbox_body = KEYS[23]
local job_flow = KEYS[24]
local job_waiting = KEYS[25]
local job_flow_live = KEYS[26]
local config = KEYS[27]

local pid = ARGV[1]
local entry = ARGV[2]
local mode = ARGV[3]
local delay_ms = tonumber(ARGV[4])
local retries = tonumber(ARGV[5])
local error_text = ARGV[6]
local wake_prefix = ARGV[7]
local publish = publish_command(ARGV[8])
local notify = ARGV[9]
local policy = cjson.decode(ARGV[10])
J.members, J.idle, J.stats, J.notify = members, idle, stats, notify
J.outbox, J.outbox_data, J.outbox_body = job_outbox, job_outbox_data, job_outbox_body
J.flow, J.waiting, J.flow_live = job_flow, job_waiting, job_flow_live

if redis.call('HGET', processes, pid) ~= entry then
  return {0, ''}
end
end_process(processes, owned, pid)
local now = now_ms()
local id = split_entry(entry)
local record = load_job(jobs, id)
if mode == 'limited' then
  local due = now + math.max(0, delay_ms)
  move(job_counts, 'a', 'd')
  record.s = 'd'
  record.v = due
  record.a = math.max(0, record.a - 1)
  redis.call('ZADD', job_delayed, due, entry)
  local shut = tonumber(redis.call('HGET', config, 'shut'))
  if not shut or shut < due then
    redis.call('HSET', config, 'shut', due)
  end
  stat(stats, 'rate_limited', 1)
  save_job(jobs, id, record)
  arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
  return {1, 'd'}
end
record.f = record.f + 1
record.E = error_text
if mode == 'error' and record.f <= retries then
  local due = now + math.max(0, delay_ms)
  move(job_counts, 'a', 'r')
  record.s = 'r'
  record.v = due
  redis.call('ZADD', job_retrying, due, entry)
  stat(stats, 'retried', 1)
  save_job(jobs, id, record)
  arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
  return {1, 'r'}
end
end_job(J, id, record, 'x', now, policy, publish)
save_job(jobs, id, record)
return {1, 'x', FLOW_OPS}
