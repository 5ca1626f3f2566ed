-- job_cancel_payload: cancel the live jobs of a queue whose payload is exactly
--   the one given (the task queues' cancel by payload, on a job queue), in one
--   page of a scan of the payloads: the caller calls again with the cursor
--   replied until it is '0' (a job present through the whole scan is seen).
-- Cost: O(page); the whole scan is O(jobs retained), one bounded call per page.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- KEYS[18..23] flow_keys the queue's flow keys (lib/flow)
-- KEYS[24] members       set     workers of this queue
-- KEYS[25] idle          set     members waiting for work
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] payload           the payload to cancel (exact bytes)
-- ARGV[2] events            broadcast channel of the queue
-- ARGV[3] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[4] notify            the queue's channel for waiters
-- ARGV[5] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[6] cursor            where the scan goes on ('0': from the start)
-- ARGV[7] page              payloads to look at in this call (HSCAN's COUNT, >= 1)
-- ARGV[8] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- Reply: {cancelled, ops, cursor, pid1, pid2, ...}: how many jobs; ops three per
--   outbox operation the cancelled flow jobs wrote (lib/flow), which the caller
--   relays at once; the cursor of the next page ('0': the scan is over); the
--   processes of the active ones among them.
--   Resending a call cancels nothing twice (a cancelled job is no longer live).
-- Errors: none.
-- Events: 'cancel:<pid>' on events per active job; 'done:<id>' on notify per job
--   someone waits for; 'work:<n>' to idle workers, or 'due:<ms>', for the
--   keep_last follow-ups the cancels placed (lib/terminal), as job_cancel.
--!include publish
--!include clock
--!include job_keys
--!include flow
--!include jobs
--!include cancel
--!include announce
local J = job_keys()
local processes = KEYS[16]
local stats = KEYS[17]
flow_keys(J, 18)
local members = KEYS[24]
local idle = KEYS[25]

local payload = ARGV[1]
local events = ARGV[2]
local publish = publish_command(ARGV[3])
local notify = ARGV[4]
local policy = cjson.decode(ARGV[5])
local cursor = ARGV[6]
local page = tonumber(ARGV[7])
local wake_prefix = ARGV[8]
J.stats, J.notify, J.members, J.idle = stats, notify, members, idle

local now = now_ms()
local matching = {}
local scanned = redis.call('HSCAN', J.data, cursor, 'COUNT', page)
for i = 1, #scanned[2], 2 do
  if scanned[2][i + 1] == payload then
    matching[#matching + 1] = scanned[2][i]
  end
end

local reply = {0, J.ops, scanned[1]}
for _, id in ipairs(matching) do
  local record = load_job(J.jobs, id)
  if is_live(record) then
    if cancel_job(J, id, record, now, policy, publish, processes, events) == 'a' then
      reply[#reply + 1] = record.p
    end
    save_job(J.jobs, id, record)
    reply[1] = reply[1] + 1
  end
end
announce_followed(J, now, wake_prefix, publish, policy.timer_grace)
return reply
