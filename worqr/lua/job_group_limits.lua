-- job_group_limits: set or remove one group's own rate and cap on active jobs
--   (lib/group; in force over the queue's group defaults), making the queue a job
--   queue when it is new. A group held by its old limits (at its cap, or waiting
--   for its rate's slot) goes back to the ring, where the next take checks the new
--   ones; one idle worker is woken for it.
-- KEYS[1] tasks       list   the queue's ready entries (a task queue's tasks)
-- KEYS[2] job_prio    zset   ready entries with a priority
-- KEYS[3] processes   hash   process id -> entry
-- KEYS[4] config      hash   per-queue options: 'kind'
-- KEYS[5] idle        set    members waiting for work
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] group       the group (1 to 256 characters, no control characters)
-- ARGV[2] rate        starts per `per` ms (integer >= 1); '' removes the rate; '-' keeps it
-- ARGV[3] per         the rate's window in ms (integer >= 1; with ARGV[2])
-- ARGV[4] max_active  the cap (integer >= 1); '' removes it; '-' keeps it
-- ARGV[5] wake_prefix per-worker wake channel = wake_prefix .. worker id
-- ARGV[6] publish     'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: 1.
-- Errors: WORQR_TASK_QUEUE when the queue holds tasks (nothing is written).
-- Events: 'work:1' on the wake channel of one idle worker, if any.
--!include publish
--!include wake
--!include kind
--!include clock
--!include group
local tasks = KEYS[1]
local job_prio = KEYS[2]
local processes = KEYS[3]
local config = KEYS[4]
local idle = KEYS[5]
local group = ARGV[1]
local rate = ARGV[2]
local per = ARGV[3]
local max_active = ARGV[4]
local wake_prefix = ARGV[5]
local publish = publish_command(ARGV[6])

local refused = claim_kind(config, 'jobs', tasks, processes)
if refused then
  return refused
end
local J = {tasks = tasks, prio = job_prio}
local now = now_ms()
local rec = load_group(J, group)
if rate == '' then
  rec.n, rec.s = nil, nil
elseif rate ~= '-' then
  rec.n, rec.s = tonumber(rate), tonumber(per)
end
if max_active == '' then
  rec.m = nil
elseif max_active ~= '-' then
  rec.m = tonumber(max_active)
end
if rec.w == 'f' then
  rec.w = nil
elseif rec.w == 't' and not (rec.sh and rec.sh > now) then
  redis.call('ZREM', J.gtimed, group)
  rec.w, rec.o, rec.tat = nil, nil, nil
end
place_group(J, group, rec)
save_group(J, group, rec, now)
wake_idle(idle, wake_prefix, publish, 1)
return 1
