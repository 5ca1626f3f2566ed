-- delete_queue: drop a queue (tasks or jobs) with its processes and bookkeeping,
-- and tell listeners and waiters. In-process copies end with it: their
-- acknowledgements are fenced. Keys go with UNLINK: a big hash is freed off the
-- main thread. Refused while the queue has live flow jobs (job_flow_drop ends
-- them first, so each reports). Its outbox stays until relayed (it empties,
-- and so goes, as relays ack), and job_applied expires after applied_ttl_ms
-- (a late resend of a flow hop that created a job here creates nothing).
-- With if_idle, refused (nothing done) while a job or task is in process.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> task or entry
-- KEYS[17] members       set     workers allowed to take from this queue
-- KEYS[18] idle          set     workers of this queue waiting for work
-- KEYS[19] recoveries    hash    task -> times recovered from a dead worker
-- KEYS[20] failed        list    dead letters (task queues)
-- KEYS[21] config        hash    per-queue options
-- KEYS[22] stats         hash    lifetime counters of the queue, by event
-- KEYS[23] seq           string  per-queue take counter
-- KEYS[24] job_flow_live zset    live flow jobs of this queue -> created ms (lib/flow)
-- KEYS[25] job_flow      hash    parent#life|i -> child i's outcome
-- KEYS[26] job_waiting   zset    flow parents waiting for their children
-- KEYS[27] job_applied   zset    's:<id>' of flow jobs created or blocked -> forget ms
-- KEYS[28] job_sched     hash    schedule name -> spec
-- KEYS[29] job_sched_next zset   schedule names by next fire ms
-- KEYS[30] job_sched_data hash   schedule name -> payload of its jobs
-- KEYS[31] job_throttle  zset    throttle dedup keys -> expiry ms (lib/dedup)
-- KEYS[32..n] owned      zset    each member's process ids on this queue
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
--   O(1) whatever the number of groups: `grp` is renamed `grp:<epoch>` and listed
--   in `grp:graves`, where sweep_graves unlinks its groups' ready keys a chunk per
--   call (the caller runs it until none is left); a queue made again has another
--   epoch, so it never sees them. The ring and the timed set are unlinked.
--   The job logs (lib/job_log) go the same way: `job:logs` renamed to a grave.
-- ARGV[1] events            broadcast channel of the queue
-- ARGV[2] notify            the queue's channel for waiters
-- ARGV[3] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[4] applied_ttl_ms    how long job_applied is kept after the queue went
-- ARGV[5] if_idle           '1': refuse while the queue has processes; '0': don't
-- Reply: integer, number of keys deleted (a renamed `grp` counts); -1 (nothing done) while live flow jobs
--   are left; -2 (nothing done) with if_idle while the queue has processes.
-- Errors: none.
-- Events: 'delete' on events; 'deleted' on notify (waiters find their jobs gone).
--!include publish
--!include job_keys
--!include group
--!include job_log
local J = job_keys()
local processes = KEYS[16]
local members = KEYS[17]
local idle = KEYS[18]
local recoveries = KEYS[19]
local failed = KEYS[20]
local config = KEYS[21]
local stats = KEYS[22]
local seq = KEYS[23]
local job_flow_live = KEYS[24]
local job_flow = KEYS[25]
local job_waiting = KEYS[26]
local job_applied = KEYS[27]
local job_sched = KEYS[28]
local job_sched_next = KEYS[29]
local job_sched_data = KEYS[30]
local job_throttle = KEYS[31]
local first_owned = 32  -- KEYS[32..n] owned, one per member
local events = ARGV[1]
local notify = ARGV[2]
local publish = publish_command(ARGV[3])
local applied_ttl_ms = tonumber(ARGV[4])
local if_idle = ARGV[5]

if if_idle == '1' and redis.call('HLEN', processes) > 0 then
  return -2
end

if redis.call('ZCARD', job_flow_live) > 0 then
  return -1
end
redis.call('PEXPIRE', job_applied, applied_ttl_ms)

local deleted = 0
-- Before config goes: its 'groups' is the epoch.
if grouped(J) and redis.call('EXISTS', J.grp) == 1 then
  redis.call('RENAME', J.grp, J.gbase .. J.gepoch)
  redis.call('HSET', J.graves, J.gepoch, '0')
  deleted = 1
end
deleted = deleted + redis.call('UNLINK', J.grp, J.ring, J.gtimed)
deleted = deleted + bury_logs(J)
deleted = deleted + redis.call('UNLINK', J.tasks, J.prio, J.seq, J.jobs, J.data, J.result,
  J.progress, J.delayed, J.retrying, J.finished, J.failed, J.cancelled, J.unique, J.counts,
  J.timer)
deleted = deleted + redis.call('UNLINK', processes, members, idle, recoveries, failed, config,
  stats, seq, job_flow, job_waiting, job_sched, job_sched_next, job_sched_data, job_throttle)
for i = first_owned, #KEYS do
  deleted = deleted + redis.call('UNLINK', KEYS[i])
end
redis.call(publish, events, 'delete')
redis.call(publish, notify, 'deleted')
return deleted
