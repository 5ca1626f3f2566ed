-- job_retry: give a failed or cancelled job a new life, queued again.
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
-- KEYS[16] idle          set     members waiting for work
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- ARGV[1] id
-- ARGV[2] nonce             unique per call: a resend answers as the first call did
-- ARGV[3] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[4] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: {retried, why}: 1 and ''; or 0 and 'unknown' (no such job, or purged),
--   'state' (not failed or cancelled: its state follows, e.g. 'state:q'), 'unique'
--   (another live job holds its unique marker).
-- Errors: none.
-- Events: 'work:1' on the wake channel of one idle worker, if any.
--!include publish
--!include wake
--!include jobs
--!include ready
--!include revive
--!include job_keys
local idle = KEYS[16]
local stats = KEYS[17]
local id = ARGV[1]
local nonce = ARGV[2]
local wake_prefix = ARGV[3]
local publish = publish_command(ARGV[4])

local now = now_ms()
local record = load_job(jobs, id)
if not record or (record.X and record.X <= now) then
  return {0, 'unknown'}
end
if record.b == nonce then
  return {1, ''}  -- a resend of the call that retried it
end
local done, why = revive(J, id, record, now)
if not done then
  return {0, why == 'state' and ('state:' .. record.s) or why}
end
record.b = nonce
save_job(jobs, id, record)
stat(stats, 'redriven', 1)
wake_idle(idle, wake_prefix, publish, 1)
return {1, ''}
