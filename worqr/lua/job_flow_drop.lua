-- job_flow_drop: the queue is being deleted: end up to `count` of its live flow
--   jobs (job_flow_live) as cancelled, each through lib/cancel and lib/terminal,
--   so each writes its hops (a child reports to its parent, a parent cancels its
--   children) in this queue's outbox for the caller to relay. The error text says
--   why. Each id leaves the index, live or not. Safe to resend: a resend ends the
--   next ones, and delete_queue refuses while any is left.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- KEYS[18..23] flow_keys the queue's flow keys (lib/flow)
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
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
--!include clock
--!include job_keys
--!include flow
--!include jobs
--!include cancel
local J = job_keys()
local processes = KEYS[16]
local stats = KEYS[17]
flow_keys(J, 18)
local events = ARGV[1]
local publish = publish_command(ARGV[2])
local notify = ARGV[3]
local policy = cjson.decode(ARGV[4])
local count = tonumber(ARGV[5])
local reason = ARGV[6]
J.stats, J.notify = stats, notify

local now = now_ms()
local flows, seen = {}, {}
for _, id in ipairs(redis.call('ZRANGE', J.flow_live, 0, count - 1)) do
  local record = load_job(J.jobs, id, now)
  if is_live(record) then
    record.E = reason
    cancel_job(J, id, record, now, policy, publish, processes, events)
    save_job(J.jobs, id, record)
    if record.g and not seen[record.g] then
      seen[record.g] = true
      flows[#flows + 1] = record.g
    end
  end
  redis.call('ZREM', J.flow_live, id)
end
return {redis.call('ZCARD', J.flow_live), flows, J.ops}
