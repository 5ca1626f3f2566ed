-- job_cancel: cancel one job that is delayed, queued, retrying or active.
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
-- ARGV[1] id
-- ARGV[2] nonce             unique per call: a resend answers as the first call did
-- ARGV[3] events            broadcast channel of the queue
-- ARGV[4] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[5] notify            the queue's channel for waiters
-- ARGV[6] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- Reply: {cancelled, state, ops}: 1 and the state it was in; 0 and its state
--   when it was already terminal ('' when there is no such job). ops: three per
--   outbox operation written (lib/flow: a flow's job reports, cancels children).
-- Errors: none.
-- Events: 'cancel:<pid>' on events for an active job; 'done:<id>' on notify when
--   someone waits for it.
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

local id = ARGV[1]
local nonce = ARGV[2]
local events = ARGV[3]
local publish = publish_command(ARGV[4])
local notify = ARGV[5]
local policy = cjson.decode(ARGV[6])
J.stats, J.notify = stats, notify
J.outbox, J.outbox_data, J.outbox_body = job_outbox, job_outbox_data, job_outbox_body
J.flow, J.waiting, J.flow_live = job_flow, job_waiting, job_flow_live

local now = now_ms()
local record = load_job(jobs, id)
if not record or (record.X and record.X <= now) then
  return {0, ''}
end
if record.z == nonce then
  return {1, record.zs}  -- a resend of the call that cancelled it
end
if not LIVE[record.s] then
  return {0, record.s}
end
local previous = cancel_job(J, id, record, now, policy, publish, processes, events)
record.z = nonce
record.zs = previous
save_job(jobs, id, record)
return {1, previous, FLOW_OPS}
