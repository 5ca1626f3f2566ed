-- job_fail: an attempt failed (the handler raised, asked for a retry or ran past
--   its timeout), or the job must fail now (worqr.Fail, a result that cannot be
--   stored). Fenced by process: a failure reported for a process that no longer
--   exists changes nothing.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] owned         zset    the owning worker's process ids on this queue
-- KEYS[18] members       set     workers of this queue
-- KEYS[19] idle          set     members waiting for work
-- KEYS[20] stats         hash    lifetime counters of the queue, by event
-- KEYS[21..26] flow_keys the queue's flow keys (lib/flow)
-- KEYS[27] config        hash    per-queue options; 'shut' (lib/limit)
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] pid
-- ARGV[2] entry             the job's id#life, as the take gave it
-- ARGV[3] mode              'error': a failure, retried while failures <= retries;
--                           'fail': failed now, no retry;
--                           'limited': not a failure (RateLimited): delayed by delay_ms,
--                           its attempt given back, and the queue (a grouped job: its
--                           group only, lib/group) shut as long
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
--   'due:<ms>' to the member told when due work comes next; 'work:1' to an idle
--   worker for a keep_last follow-up queued now (lib/terminal).
--!include publish
--!include clock
--!include job_keys
--!include flow
--!include jobs
--!include counters
--!include terminal
--!include group
--!include timer
--!include announce
--!include end_process
local J = job_keys()
local processes = KEYS[16]
local owned = KEYS[17]
local members = KEYS[18]
local idle = KEYS[19]
local stats = KEYS[20]
flow_keys(J, 21)
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

if redis.call('HGET', processes, pid) ~= entry then
  return {0, ''}
end
end_process(processes, owned, pid)
local now = now_ms()
local id = split_entry(entry)
local record = load_job(J.jobs, id)
if mode == 'limited' then
  local due = now + math.max(0, delay_ms)
  move(J, 'a', 'd')
  record.s = 'd'
  record.v = due
  record.a = math.max(0, record.a - 1)
  redis.call('ZADD', J.delayed, due, entry)
  if record.G then
    group_shut(J, record, due)  -- its group only
    group_move(J, record, 'a', 'd', now)
  else
    local shut = tonumber(redis.call('HGET', config, 'shut'))
    if not shut or shut < due then
      redis.call('HSET', config, 'shut', due)
    end
  end
  stat(J, 'rate_limited', 1)
  save_job(J.jobs, id, record)
  arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
  return {1, 'd'}
end
record.f = record.f + 1
record.E = error_text
if mode == 'error' and record.f <= retries then
  local due = now + math.max(0, delay_ms)
  move(J, 'a', 'r')
  group_move(J, record, 'a', 'r', now)
  record.s = 'r'
  record.v = due
  redis.call('ZADD', J.retrying, due, entry)
  stat(J, 'retried', 1)
  save_job(J.jobs, id, record)
  arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
  return {1, 'r'}
end
end_job(J, id, record, 'x', now, policy, publish)
save_job(J.jobs, id, record)
announce_followed(J, now, wake_prefix, publish, policy.timer_grace)
return {1, 'x', J.ops}
