-- job_sched_resume: let a paused schedule of the queue fire again. The fires it
--   missed while paused are owed once: they collapse into the latest of them
--   (an every schedule's next fire moves back to it, a cron buffer keeps it and
--   the times still to come, and a resync computes missed times from now only),
--   which the next visit fires (one idle member is woken for it) by the usual
--   rules; then it goes on from there.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] members       set     workers of this queue
-- KEYS[17] idle          set     members waiting for work
-- KEYS[18..20] sched_keys the queue's schedule keys (lib/schedule)
-- Keys named by data: the queue's group keys (lib/group) and job logs (lib/job_log),
--   all in its slot ({P:Q}).
-- ARGV[1] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[3] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[4] name              the schedule's name
-- Reply: 1 when the schedule exists (running now, or already), 0 when it does not.
-- Errors: none.
-- Events: 'work:1' to one idle worker when a missed fire is owed; 'due:<ms>' to
--   the member told when due work comes next.
--!include publish
--!include wake
--!include clock
--!include job_keys
--!include schedule
--!include timer
local J = job_keys()
local members = KEYS[16]
local idle = KEYS[17]
sched_keys(J, 18)
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local policy = cjson.decode(ARGV[3])
local name = ARGV[4]
J.members, J.idle = members, idle

-- owe_once(spec, now): the fires missed up to now collapse into the latest of them
local function owe_once(spec, now)
  if spec.e then
    if spec.n and spec.n <= now then
      spec.n = spec.n + math.floor((now - spec.n) / spec.e) * spec.e
    end
    return
  end
  local rest, latest = {}, nil
  for _, at in ipairs(spec.f or {}) do
    if at <= now then
      latest = at
    else
      rest[#rest + 1] = at
    end
  end
  if latest then
    table.insert(rest, 1, latest)
  end
  spec.f = rest
  spec.n = rest[1]
  spec.b = math.max(spec.b or now, now)  -- a resync's missed times start after now
end

local spec = load_schedule(J, name)
if not spec then
  return 0
end
if not spec.p then
  return 1
end
spec.p = nil
local now = now_ms()
owe_once(spec, now)
save_schedule(J, name, spec, now)
if spec.n and spec.n <= now then
  wake_idle(idle, wake_prefix, publish, 1)  -- its take fires the one owed
end
arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
return 1
