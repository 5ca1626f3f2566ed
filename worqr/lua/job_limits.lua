-- job_limits: set or remove a job queue's rate limit and cap on active jobs (lib/limit)
--   and the defaults of its groups (lib/group),
--   making the queue a job queue when it is new; one idle worker is woken to use
--   what a looser limit lets start now.
-- KEYS[1] tasks       list   the queue's ready entries (a task queue's tasks)
-- KEYS[2] processes   hash   process id -> entry
-- KEYS[3] config      hash   per-queue options: 'kind', and the limits
-- KEYS[4] idle        set    members waiting for work
-- ARGV[1] rate        starts per `per` ms (integer >= 1); '' removes the rate; '-' keeps it
-- ARGV[2] per         the rate's window in ms (integer >= 1; with ARGV[1])
-- ARGV[3] max_active  the cap (integer >= 1); '' removes it; '-' keeps it
-- ARGV[4] wake_prefix per-worker wake channel = wake_prefix .. worker id
-- ARGV[5] publish     'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[6] group_rate  every group's default rate (lib/group), as ARGV[1]
-- ARGV[7] group_per   its window in ms, as ARGV[2]
-- ARGV[8] group_max_active every group's default cap, as ARGV[3]
-- Reply: 1.
-- Errors: WORQR_TASK_QUEUE when the queue holds tasks (nothing is written).
-- Events: 'work:1' on the wake channel of one idle worker, if any.
--!include publish
--!include wake
--!include kind
local tasks = KEYS[1]
local processes = KEYS[2]
local config = KEYS[3]
local idle = KEYS[4]
local rate = ARGV[1]
local per = ARGV[2]
local max_active = ARGV[3]
local wake_prefix = ARGV[4]
local publish = publish_command(ARGV[5])
local group_rate = ARGV[6]
local group_per = ARGV[7]
local group_max_active = ARGV[8]

local refused = claim_kind(config, 'jobs', tasks, processes)
if refused then
  return refused
end
-- apply(value, set, drop): '' removes the fields `drop`, '-' keeps them, anything
--   else sets the field/value pairs `set`
local function apply(value, set, drop)
  if value == '' then
    redis.call('HDEL', config, unpack(drop))
  elseif value ~= '-' then
    redis.call('HSET', config, unpack(set))
  end
end
apply(rate, {'rate', rate, 'per', per}, {'rate', 'per', 'tat'})  -- its slot goes with it
apply(max_active, {'max_active', max_active}, {'max_active'})
apply(group_rate, {'group_rate', group_rate, 'group_per', group_per}, {'group_rate', 'group_per'})
apply(group_max_active, {'group_max_active', group_max_active}, {'group_max_active'})
wake_idle(idle, wake_prefix, publish, 1)
return 1
