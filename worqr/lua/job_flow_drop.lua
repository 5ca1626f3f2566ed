-- job_flow_drop: the queue is being deleted: end up to `count` of its live flow
--   jobs (job_flow_live) as cancelled, each through lib/cancel and lib/terminal,
--   so each writes its hops (a child reports to its parent, a parent cancels its
--   children) in this queue's outbox for the caller to relay. The error text says
--   why. Each id leaves the index, live or not. Safe to resend: a resend ends the
--   next ones, and delete_queue refuses while any is left.
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
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- KEYS[18] job_outbox    zset    operations for other queues -> when a relay may take them
-- KEYS[19] job_outbox_data hash  operation id -> header JSON
-- KEYS[20] job_outbox_body hash  operation id -> body (a result passed on)
-- KEYS[21] job_flow      hash    parent#life|i -> child i's outcome
-- KEYS[22] job_waiting   zset    flow parents waiting for their children
-- KEYS[23] job_flow_live zset    live flow jobs of this queue -> created ms (lib/flow)
-- ARGV[1] events            broadcast channel of the queue
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[3] notify            the queue's channel for waiters
-- ARGV[4] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[5] count             how many live flow jobs to end at most
-- ARGV[6] reason            the error text the ended jobs carry (and report)
-- Reply: {left, flows, ops}: how many live flow jobs are left; the ids of the
--   flows whose jobs ended here (distinct); ops three per outbox operation
--   written (lib/flow).
-- Errors: none.
-- Events: 'cancel:<pid>' on events per active job; 'done:<id>' on notify per job
--   someone waits for.
--!include publish
--!include jobs
--!include ready
--!include flow
--!include terminal
--!include cancel
--!include job_keys
local processes = KEYS[16]
local stats = KEYS[17]
local job_outbox = KEYS[18]
local job_outbox_data = KEYS[19]
local job_outbox_body = KEYS[20]
local job_flow = KEYS[21]
local job_waiting = KEYS[22]
local job_flow_live = KEYS[23]
local events = ARGV[1]
local publish = publish_command(ARGV[2])
local notify = ARGV[3]
local policy = cjson.decode(ARGV[4])
local count = tonumber(ARGV[5])
local reason = ARGV[6]
J.stats, J.notify = stats, notify
J.outbox, J.outbox_data, J.outbox_body = job_outbox, job_outbox_data, job_outbox_body
J.flow, J.waiting, J.flow_live = job_flow, job_waiting, job_flow_live

local now = now_ms()
local flows, seen = {}, {}
for _, id in ipairs(redis.call('ZRANGE', job_flow_live, 0, count - 1)) do
  local record = load_job(jobs, id)
  if record and LIVE[record.s] and not (record.X and record.X <= now) then
    record.E = reason
    cancel_job(J, id, record, now, policy, publish, processes, events)
    save_job(jobs, id, record)
    if record.g and not seen[record.g] then
      seen[record.g] = true
      flows[#flows + 1] = record.g
    end
  end
  redis.call('ZREM', job_flow_live, id)
end
return {redis.call('ZCARD', job_flow_live), flows, FLOW_OPS}
