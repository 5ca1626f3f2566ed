-- job_stop: end one process of a job and put the job back at the front of its
--   priority, queued, with no counter charged (a graceful stop, reconcile).
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
-- KEYS[17] owned         zset    the owning worker's process ids on this queue
-- KEYS[18] idle          set     members waiting for work
-- KEYS[19] stats         hash    lifetime counters of the queue, by event
-- ARGV[1] pid
-- ARGV[2] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[3] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: 1 if the process existed and its job is queued again, else 0.
-- Errors: none.
-- Events: 'work:1' on the wake channel of one idle worker, if any.
--!include publish
--!include wake
--!include jobs
--!include ready
--!include end_process
--!include job_keys
local processes = KEYS[16]
local owned = KEYS[17]
local idle = KEYS[18]
local stats = KEYS[19]
local pid = ARGV[1]
local wake_prefix = ARGV[2]
local publish = publish_command(ARGV[3])

local entry = end_process(processes, owned, pid)
if not entry then
  return 0
end
local id = split_entry(entry)
return_job(J, id, load_job(jobs, id), entry)
stat(stats, 'stopped', 1)
wake_idle(idle, wake_prefix, publish, 1)
return 1
