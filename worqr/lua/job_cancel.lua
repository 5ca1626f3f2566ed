-- job_cancel: cancel one job that is delayed, queued, retrying or active.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- KEYS[18..23] flow_keys the queue's flow keys (lib/flow)
-- KEYS[24] members       set     workers of this queue
-- KEYS[25] idle          set     members waiting for work
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] id
-- ARGV[2] nonce             unique per call: a resend answers as the first call did
-- ARGV[3] events            broadcast channel of the queue
-- ARGV[4] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[5] notify            the queue's channel for waiters
-- ARGV[6] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[7] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- Reply: {cancelled, state, ops}: 1 and the state it was in; 0 and its state
--   when it was already terminal ('' when there is no such job). ops: three per
--   outbox operation written (lib/flow: a flow's job reports, cancels children).
-- Errors: none.
-- Events: 'cancel:<pid>' on events for an active job; 'done:<id>' on notify when
--   someone waits for it; 'work:1' or 'due:<ms>' for a keep_last follow-up the
--   cancel placed (lib/terminal).
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

local id = ARGV[1]
local nonce = ARGV[2]
local events = ARGV[3]
local publish = publish_command(ARGV[4])
local notify = ARGV[5]
local policy = cjson.decode(ARGV[6])
local wake_prefix = ARGV[7]
J.stats, J.notify, J.members, J.idle = stats, notify, members, idle

local now = now_ms()
local record = load_job(J.jobs, id, now)
if not record then
  return {0, ''}
end
if record.z == nonce then
  return {1, record.zs}  -- a resend of the call that cancelled it
end
if not is_live(record) then
  return {0, record.s}
end
local previous = cancel_job(J, id, record, now, policy, publish, processes, events)
record.z = nonce
record.zs = previous
save_job(J.jobs, id, record)
announce_followed(J, now, wake_prefix, publish, policy.timer_grace)
return {1, previous, J.ops}
