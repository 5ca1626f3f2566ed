-- job_cancel_payload: cancel the live jobs of a queue whose payload is exactly
--   the one given (the task queues' cancel by payload, on a job queue), in one
--   page of a scan of the payloads: the caller calls again with the cursor
--   replied until it is '0' (a job present through the whole scan is seen).
-- Cost: O(page); the whole scan is O(jobs retained), one bounded call per page.
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
-- ARGV[1] payload           the payload to cancel (exact bytes)
-- ARGV[2] events            broadcast channel of the queue
-- ARGV[3] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[4] notify            the queue's channel for waiters
-- ARGV[5] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[6] cursor            where the scan goes on ('0': from the start)
-- ARGV[7] page              payloads to look at in this call (HSCAN's COUNT, >= 1)
-- Reply: {cancelled, ops, cursor, pid1, pid2, ...}: how many jobs; ops three per
--   outbox operation the cancelled flow jobs wrote (lib/flow), which the caller
--   relays at once; the cursor of the next page ('0': the scan is over); the
--   processes of the active ones among them.
--   Resending a call cancels nothing twice (a cancelled job is no longer live).
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

local payload = ARGV[1]
local events = ARGV[2]
local publish = publish_command(ARGV[3])
local notify = ARGV[4]
local policy = cjson.decode(ARGV[5])
local cursor = ARGV[6]
local page = tonumber(ARGV[7])
J.stats, J.notify = stats, notify
J.outbox, J.outbox_data, J.outbox_body = job_outbox, job_outbox_data, job_outbox_body
J.flow, J.waiting, J.flow_live = job_flow, job_waiting, job_flow_live

local now = now_ms()
local matching = {}
local scanned = redis.call('HSCAN', job_data, cursor, 'COUNT', page)
for i = 1, #scanned[2], 2 do
  if scanned[2][i + 1] == payload then
    matching[#matching + 1] = scanned[2][i]
  end
end

local reply = {0, FLOW_OPS, scanned[1]}
for _, id in ipairs(matching) do
  local record = load_job(jobs, id)
  if record and LIVE[record.s] then
    if cancel_job(J, id, record, now, policy, publish, processes, events) == 'a' then
      reply[#reply + 1] = record.p
    end
    save_job(jobs, id, record)
    reply[1] = reply[1] + 1
  end
end
return reply
