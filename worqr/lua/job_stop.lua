-- job_stop: end one process of a job and put the job back at the front of its
--   priority, queued, with no counter charged (a graceful stop, reconcile).
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] owned         zset    the owning worker's process ids on this queue
-- KEYS[18] idle          set     members waiting for work
-- KEYS[19] stats         hash    lifetime counters of the queue, by event
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] pid
-- ARGV[2] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[3] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: 1 if the process existed and its job is queued again, else 0.
-- Errors: none.
-- Events: 'work:1' on the wake channel of one idle worker, if any.
--!include publish
--!include wake
--!include job_keys
--!include jobs
--!include counters
--!include return
--!include end_process
local J = job_keys()
local processes = KEYS[16]
local owned = KEYS[17]
local idle = KEYS[18]
local stats = KEYS[19]
local pid = ARGV[1]
local wake_prefix = ARGV[2]
local publish = publish_command(ARGV[3])
J.stats = stats

local entry = end_process(processes, owned, pid)
if not entry then
  return 0
end
local id = split_entry(entry)
return_job(J, id, load_job(J.jobs, id), entry)
stat(J, 'stopped', 1)
wake_idle(idle, wake_prefix, publish, 1)
return 1
