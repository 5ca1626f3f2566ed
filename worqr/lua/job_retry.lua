-- job_retry: give a failed or cancelled job a new life, queued again.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] idle          set     members waiting for work
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
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
--!include clock
--!include job_keys
--!include jobs
--!include counters
--!include revive
local J = job_keys()
local idle = KEYS[16]
local stats = KEYS[17]
local id = ARGV[1]
local nonce = ARGV[2]
local wake_prefix = ARGV[3]
local publish = publish_command(ARGV[4])
J.stats = stats

local now = now_ms()
local record = load_job(J.jobs, id, now)
if not record then
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
save_job(J.jobs, id, record)
stat(J, 'redriven', 1)
wake_idle(idle, wake_prefix, publish, 1)
return {1, ''}
