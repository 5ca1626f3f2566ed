-- job_promote_many: one chunk of a bulk promote (promote_jobs): up to `count`
--   delayed jobs, soonest due first, become queued now, at the back of their
--   priority, whatever their due time; idle members are woken for them, one per
--   job at most, as promotion does (a woken worker's take applies the queue's
--   limits). Retrying jobs are not touched: their wait is a failure's backoff.
--   A grouped job goes to its group's ready keys, its group's counts and place
--   moved (lib/group's make_ready and group_move, as lib/promote does).
-- Cost: O(count log N): one bounded call per chunk.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] idle          set     members waiting for work
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] count             delayed entries looked at, at most
-- ARGV[2] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[3] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: {promoted, looked, left}: jobs queued now; delayed entries looked at
--   (each leaves the zset: stale ones too); delayed entries left.
--   A resend promotes only what is still delayed.
-- Errors: none.
-- Events: 'work:<promoted>' on the wake channel of each idle worker woken.
--!include publish
--!include wake
--!include clock
--!include job_keys
--!include jobs
--!include counters
--!include group
local J = job_keys()
local idle = KEYS[16]
local stats = KEYS[17]
local count = tonumber(ARGV[1])
local wake_prefix = ARGV[2]
local publish = publish_command(ARGV[3])
J.stats = stats

local now = now_ms()
local promoted = 0
local entries = redis.call('ZRANGE', J.delayed, 0, count - 1)
for _, entry in ipairs(entries) do
  local id, life = split_entry(entry)
  local record = load_job(J.jobs, id)
  -- Another life or state: a stale member (never run it).
  if record and record.l == life and record.s == 'd' then
    move(J, 'd', 'q')
    record.s = 'q'
    record.v = now
    make_ready(J, record, entry, false)
    group_move(J, record, 'd', 'q', now)
    save_job(J.jobs, id, record)
    promoted = promoted + 1
  end
end
if #entries > 0 then
  redis.call('ZREM', J.delayed, unpack(entries))
end
stat(J, 'promoted', promoted)
wake_idle(idle, wake_prefix, publish, promoted)
return {promoted, #entries, redis.call('ZCARD', J.delayed)}
