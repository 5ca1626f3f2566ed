-- job_requeue_owned: return one chunk of a worker's job processes on one queue
--   to the front of their priority, newest first, so the oldest ends up next.
--   Failing a dead worker counts a recovery per job and fails a job recovered more
--   than max_recoveries times. Idempotent: run it until `remaining` is 0.
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
-- KEYS[17] owned         zset    the worker's process ids on this queue, score = seq
-- KEYS[18] members       set     workers allowed to take from this queue
-- KEYS[19] idle          set     members waiting for work
-- KEYS[20] config        hash    per-queue options; 'max_recoveries' overrides ARGV[4]
-- KEYS[21] stats         hash    lifetime counters of the queue, by event
-- KEYS[22] job_outbox    zset    operations for other queues -> when a relay may take them
-- KEYS[23] job_outbox_data hash  operation id -> header JSON
-- KEYS[24] job_outbox_body hash  operation id -> body (a result passed on)
-- KEYS[25] job_flow      hash    parent#life|i -> child i's outcome
-- KEYS[26] job_waiting   zset    flow parents waiting for their children
-- KEYS[27] job_flow_live zset    live flow jobs of this queue -> created ms (lib/flow)
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
--!include wake
--!include jobs
--!include ready
--!include flow
--!include terminal
--!include promote
--!include end_process
--!include kind
--!include job_keys
local processes = KEYS[16]
local owned = KEYS[17]
local members = KEYS[18]
local idle = KEYS[19]
local config = KEYS[20]
local stats = KEYS[21]
local job_outbox = KEYS[22]
local job_outbox_data = KEYS[23]
local job_outbox_body = KEYS[24]
local job_flow = KEYS[25]
local job_waiting = KEYS[26]
local job_flow_live = KEYS[27]

local worker = ARGV[1]
local mode = ARGV[2]
local chunk = tonumber(ARGV[3])
local max_recoveries = tonumber(redis.call('HGET', config, 'max_recoveries') or ARGV[4])
local wake_prefix = ARGV[5]
local publish = publish_command(ARGV[6])
local notify = ARGV[7]
local policy = cjson.decode(ARGV[8])
J.members, J.idle, J.stats, J.notify = members, idle, stats, notify
J.outbox, J.outbox_data, J.outbox_body = job_outbox, job_outbox_data, job_outbox_body
J.flow, J.waiting, J.flow_live = job_flow, job_waiting, job_flow_live

local refused = not_a_task_queue(config)
if refused then
  return refused
end

if mode ~= 'release' then
  -- Fence first: from now on this worker cannot take from the queue.
  redis.call('SREM', members, worker)
  redis.call('SREM', idle, worker)
end

local now = now_ms()
local requeued = 0
local failed = 0
for _, pid in ipairs(redis.call('ZREVRANGE', owned, 0, chunk - 1)) do
  -- No entry: finished or cancelled meanwhile; nothing to return.
  local entry = end_process(processes, owned, pid)
  if entry then
    local id = split_entry(entry)
    local record = load_job(jobs, id)
    if mode == 'fail' then
      record.r = record.r + 1
    end
    if mode == 'fail' and max_recoveries >= 0 and record.r > max_recoveries then
      record.E = 'WorkerLost: recovered ' .. (record.r - 1) .. ' times'
      end_job(J, id, record, 'x', now, policy, publish)
      save_job(jobs, id, record)
      failed = failed + 1
    else
      return_job(J, id, record, entry)
      requeued = requeued + 1
    end
  end
end

if requeued > 0 then
  stat(stats, mode == 'fail' and 'recovered' or 'released', requeued)
  wake_idle(idle, wake_prefix, publish, requeued)
end
stat(stats, 'poisoned', failed)
if mode ~= 'release' then
  arm_timer(J, now, worker, wake_prefix, publish, policy.timer_grace)
end
return {requeued, failed, redis.call('ZCARD', owned), FLOW_OPS}
