-- job_requeue_owned: return one chunk of a worker's job processes on one queue
--   to the front of their priority, newest first, so the oldest ends up next.
--   Failing a dead worker counts a recovery per job and fails a job recovered more
--   than max_recoveries times. Idempotent: run it until `remaining` is 0.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] owned         zset    the worker's process ids on this queue, score = seq
-- KEYS[18] members       set     workers allowed to take from this queue
-- KEYS[19] idle          set     members waiting for work
-- KEYS[20] config        hash    per-queue options; 'max_recoveries' overrides ARGV[4]
-- KEYS[21] stats         hash    lifetime counters of the queue, by event
-- KEYS[22..27] flow_keys the queue's flow keys (lib/flow)
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] worker            the worker whose processes return
-- ARGV[2] mode              'fail' (a peer fails a dead worker), 'leave' (the worker
--                           stops working the queue), 'release' (it hands its jobs back
--                           and stays)
-- ARGV[3] chunk             processes handled per call (bounds the script's run time)
-- ARGV[4] max_recoveries    a job recovered more often than this fails; -1: never
-- ARGV[5] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[6] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[7] notify            the queue's channel for waiters
-- ARGV[8] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- Reply: {requeued, failed, remaining, ops}: ops three per outbox operation the
--   failed jobs wrote (lib/flow), which the caller relays at once
-- Errors: WORQR_TASK_QUEUE when the queue is not a job queue (requeue_owned is its version).
-- Events: 'work:<requeued>' to each idle worker woken (at most one per job);
--   'done:<id>' on notify for a job failed here that someone waits for; 'due:<ms>'
--   to the member told when due work comes next, never the leaving worker.
--!include publish
--!include clock
--!include job_keys
--!include flow
--!include jobs
--!include counters
--!include return
--!include terminal
--!include timer
--!include end_process
--!include wake
--!include release
local J = job_keys()
local processes = KEYS[16]
local owned = KEYS[17]
local members = KEYS[18]
local idle = KEYS[19]
local config = KEYS[20]
local stats = KEYS[21]
flow_keys(J, 22)

local worker = ARGV[1]
local mode = ARGV[2]
local chunk = tonumber(ARGV[3])
local max_recoveries = tonumber(redis.call('HGET', config, 'max_recoveries') or ARGV[4])
local wake_prefix = ARGV[5]
local publish = publish_command(ARGV[6])
local notify = ARGV[7]
local policy = cjson.decode(ARGV[8])
J.members, J.idle, J.stats, J.notify = members, idle, stats, notify

local refused = start_release('jobs', config, members, idle, worker, mode)
if refused then
  return refused
end

local now = now_ms()
local requeued = 0
local failed = 0
for _, pid in ipairs(newest_owned(owned, chunk)) do
  -- No entry: finished or cancelled meanwhile; nothing to return.
  local entry = end_process(processes, owned, pid)
  if entry then
    local id = split_entry(entry)
    local record = load_job(J.jobs, id)
    if mode == 'fail' then
      record.r = record.r + 1
      record.lw, record.la = worker, record.a  -- the next run's trace tells whose death it follows
    end
    if mode == 'fail' and max_recoveries >= 0 and record.r > max_recoveries then
      record.E = 'WorkerLost: recovered ' .. (record.r - 1) .. ' times'
      end_job(J, id, record, 'x', now, policy, publish)
      save_job(J.jobs, id, record)
      failed = failed + 1
    else
      return_job(J, id, record, entry)
      requeued = requeued + 1
    end
  end
end

returned(stats, idle, wake_prefix, publish, mode, requeued)
if J.followed then  -- keep_last follow-ups the failed jobs placed (lib/terminal)
  wake_idle(idle, wake_prefix, publish, J.followed[1])
end
stat(J, 'poisoned', failed)
if mode ~= 'release' then
  arm_timer(J, now, worker, wake_prefix, publish, policy.timer_grace)
end
return {requeued, failed, redis.call('ZCARD', owned), J.ops}
