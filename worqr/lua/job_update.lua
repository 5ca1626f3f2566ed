-- job_update: change a delayed, queued or retrying job: its payload (its unique
--   marker moves with it; a dedup key's marker, record field U, stays, and stays
--   another job's when the key's next job holds it), its priority and due time
--   (lib/change). Nothing is written when the job is not changeable.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] members       set     workers of this queue
-- KEYS[17] idle          set     members waiting for work
-- KEYS[18] stats         hash    lifetime counters of the queue, by event
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] id
-- ARGV[2] changes           JSON: P priority, d delay ms | A at ms (epoch, Redis's
--                           clock), u the new payload's unique marker (sent with
--                           every new payload: its presence says there is one)
-- ARGV[3] payload           the new payload (when changes.u is present)
-- ARGV[4] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[5] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[6] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- Reply: {updated, state}: 1 and its state now (d, q or r); or 0 and why:
--   'unknown' (no such job, or purged), 'flow' (a flow's job), 'state:<s>' (not
--   delayed, queued or retrying), 'unique' (another live job holds the new
--   payload's marker). A resend sets the same values again.
-- Errors: none.
-- Events: 'work:1' to one idle worker when the job is queued now; 'due:<ms>' to
--   the member told when due work comes next, when it is delayed.
--!include publish
--!include wake
--!include clock
--!include job_keys
--!include jobs
--!include change
--!include timer
local J = job_keys()
local members = KEYS[16]
local idle = KEYS[17]
local stats = KEYS[18]
local id = ARGV[1]
local changes = cjson.decode(ARGV[2])
local payload = ARGV[3]
local wake_prefix = ARGV[4]
local publish = publish_command(ARGV[5])
local policy = cjson.decode(ARGV[6])
J.members, J.idle, J.stats = members, idle, stats

local CHANGEABLE = {d = true, q = true, r = true}

local now = now_ms()
local record = load_job(J.jobs, id, now)
if not record then
  return {0, 'unknown'}
end
if record.g then
  return {0, 'flow'}
end
if not CHANGEABLE[record.s] then
  return {0, 'state:' .. record.s}
end
local marker = changes.u
local moves = marker and record.u and not record.U and marker ~= record.u  -- a dedup key stays
if moves then
  local holder = redis.call('HGET', J.unique, marker)
  if holder then
    local other, life = split_entry(holder)
    if other ~= id and is_live(load_job(J.jobs, other), life) then
      return {0, 'unique'}
    end
  end
end

-- Nothing refused: from here every change is written.
local old_entry = entry_of(id, record.l)
-- The job holds its marker (or takes its new one): a dedup key's marker may be
-- another job's by now (the key's next job, created once this one ran).
local holds = record.u and (moves or redis.call('HGET', J.unique, record.u) == old_entry)
if marker then
  redis.call('HSET', J.data, id, payload)
  if moves then
    if redis.call('HGET', J.unique, record.u) == old_entry then
      redis.call('HDEL', J.unique, record.u)
    end
    record.u = marker
  end
end

local due = changes.A or (changes.d and now + changes.d)
local woken = change_job(J, id, record, changes.P or record.P or 0, due, now)
if holds then  -- the marker names this life's entry (a new one, or a new marker)
  redis.call('HSET', J.unique, record.u, entry_of(id, record.l))
end
save_job(J.jobs, id, record)
wake_idle(idle, wake_prefix, publish, woken)
if record.s ~= 'q' and due then
  arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
end
return {1, record.s}
