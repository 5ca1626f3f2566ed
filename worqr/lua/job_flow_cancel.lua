-- job_flow_cancel: cancel jobs of a flow by id, whether or not they exist yet.
--   A live one is cancelled (as job_cancel does; a parent's children are cancelled
--   through the outbox, a child reports to its parent); one that does not exist
--   yet is blocked: 's:<id>' joins job_applied, so its submit, when a relay
--   brings it, creates nothing. Idempotent.
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
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- KEYS[18] job_applied   zset    's:<id>' of flow jobs created or blocked -> forget ms
-- KEYS[19] job_outbox    zset    operations for other queues -> when a relay may take them
-- KEYS[20] job_outbox_data hash  operation id -> header JSON
-- KEYS[21] job_outbox_body hash  operation id -> body (a result passed on)
-- KEYS[22] job_flow      hash    parent#life|i -> child i's outcome
-- KEYS[23] job_waiting   zset    flow parents waiting for their children -> created ms
-- KEYS[24] job_flow_live zset    live flow jobs of this queue -> created ms (lib/flow)
-- ARGV[1] events            broadcast channel of the queue
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[3] notify            the queue's channel for waiters
-- ARGV[4] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[5..n] ids            the jobs to cancel
-- Reply: {cancelled, ops}: how many live jobs were cancelled; ops three per
--   outbox operation written (lib/flow).
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
local job_applied = KEYS[18]
local job_outbox = KEYS[19]
local job_outbox_data = KEYS[20]
local job_outbox_body = KEYS[21]
local job_flow = KEYS[22]
local job_waiting = KEYS[23]
local job_flow_live = KEYS[24]
local events = ARGV[1]
local publish = publish_command(ARGV[2])
local notify = ARGV[3]
local policy = cjson.decode(ARGV[4])
local first_id = 5  -- ARGV[5..n] ids
J.stats, J.notify = stats, notify
J.outbox, J.outbox_data, J.outbox_body = job_outbox, job_outbox_data, job_outbox_body
J.flow, J.waiting, J.flow_live = job_flow, job_waiting, job_flow_live

local now = now_ms()
local cancelled = 0
for i = first_id, #ARGV do
  local id = ARGV[i]
  local record = load_job(jobs, id)
  if record and LIVE[record.s] and not (record.X and record.X <= now) then
    cancel_job(J, id, record, now, policy, publish, processes, events)
    save_job(jobs, id, record)
    cancelled = cancelled + 1
  else
    redis.call('ZADD', job_applied, 'NX', now + policy.applied_ttl, 's:' .. id)
  end
end
return {cancelled, FLOW_OPS}
