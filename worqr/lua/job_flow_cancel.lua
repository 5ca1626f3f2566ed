-- job_flow_cancel: cancel jobs of a flow by id, whether or not they exist yet.
--   A live one is cancelled (as job_cancel does; a parent's children are cancelled
--   through the outbox, a child reports to its parent); one that does not exist
--   yet is blocked: 's:<id>' joins job_applied, so its submit, when a relay
--   brings it, creates nothing. Idempotent.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- KEYS[18] job_applied   zset    's:<id>' of flow jobs created or blocked -> forget ms
-- KEYS[19..24] flow_keys the queue's flow keys (lib/flow)
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
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
--!include clock
--!include job_keys
--!include flow
--!include jobs
--!include cancel
local J = job_keys()
local processes = KEYS[16]
local stats = KEYS[17]
local job_applied = KEYS[18]
flow_keys(J, 19)
local events = ARGV[1]
local publish = publish_command(ARGV[2])
local notify = ARGV[3]
local policy = cjson.decode(ARGV[4])
local first_id = 5  -- ARGV[5..n] ids
J.stats, J.notify = stats, notify

local now = now_ms()
local cancelled = 0
for i = first_id, #ARGV do
  local id = ARGV[i]
  local record = load_job(J.jobs, id, now)
  if is_live(record) then
    cancel_job(J, id, record, now, policy, publish, processes, events)
    save_job(J.jobs, id, record)
    cancelled = cancelled + 1
  else
    redis.call('ZADD', job_applied, 'NX', now + policy.applied_ttl, 's:' .. id)
  end
end
return {cancelled, J.ops}
