-- job_take: finish a batch of this worker's jobs of one queue, storing their
--   results, and take up to `count` more, in one call (a worker's steady state).
--   On the way: purge expired records, promote due jobs, fire due schedules,
--   tell the next timer.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] owned         zset    this worker's process ids on this queue, score = seq
-- KEYS[18] members       set     workers allowed to take from this queue
-- KEYS[19] idle          set     members waiting for work
-- KEYS[20] seq           string  per-queue take counter (orders `owned`)
-- KEYS[21] config        hash    per-queue options; 'kind' is 'jobs'; limits (lib/limit)
-- KEYS[22] stats         hash    lifetime counters of the queue, by event
-- KEYS[23..25] sched_keys the queue's schedule keys (lib/schedule)
-- KEYS[26..31] flow_keys the queue's flow keys (lib/flow)
-- Keys named by data: the queue's group keys (lib/group) and job logs (lib/job_log),
--   all in its slot ({P:Q}).
-- ARGV[1] worker            the worker's id
-- ARGV[2] pid_prefix        client-chosen, unique per call; new process i is pid_prefix .. i
-- ARGV[3] count             how many jobs to take at most (>= 0; 0 only finishes)
-- ARGV[4] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[5] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[6] notify            the queue's channel for waiters
-- ARGV[7] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[8] full              '1': the worker has no room (count 0 at its concurrency,
--                           or stopping): it leaves the idle set; '' else
-- ARGV[9..n] finishes       four per finished job: pid, entry, result type (s, b, n), result
-- Reply: {finished, taken, more, refill, ops, now}. finished: one integer per
--   finish, in order: 1 accepted, 0 fenced (the process no longer existed: failed
--   over, cancelled, deleted), 2 already finished by this same pid (a resend).
--   taken: flat, five per job: pid, entry, payload, the JSON field of its record
--   (lib/jobs: f failures, r recoveries, v available ms, R retries, B backoff, T
--   timeout ms; a flow parent's cq and cf; tp ts a trace context, lw la the
--   worker last failed over and its attempt), this attempt's number. more: 1 when
--   the take stopped at the skip budget with jobs maybe left (call again).
--   refill: cron schedules low on fire times, six fields each (lib/schedule's
--   refill_request): compute more, send job_sched_refill. ops: three per outbox
--   operation the finishes wrote (lib/flow). now: the server's ms of this call.
--   Resending the same call finishes nothing twice and returns what it took.
-- Errors: WORQR_NOT_MEMBER when count > 0 and the worker is not (or no longer) a
--   member (nothing is finished then: resend with count 0); WORQR_TASK_QUEUE when
--   the queue holds tasks.
-- Events: 'done:<id>' on notify for a finished job someone waits for; 'work:<n>'
--   to idle workers for promoted (or fired) jobs and keep_last follow-ups its
--   finishes queued (lib/terminal) that this call does not take, and to one
--   idle worker when this call's finishes free room under max_active that it does not
--   take; 'due:<ms>' to the member told when due work comes next (a rate limit's
--   reopening included).
--!include publish
--!include job_keys
--!include flow
--!include schedule
--!include counters
--!include admit
--!include finish
--!include purge
--!include promote
--!include limit
--!include start
--!include fair
--!include wake
--!include timer
local J = job_keys()
local processes = KEYS[16]
local owned = KEYS[17]
local members = KEYS[18]
local idle = KEYS[19]
local seq = KEYS[20]
local config = KEYS[21]
local stats = KEYS[22]
sched_keys(J, 23)
flow_keys(J, 26)
local worker = ARGV[1]
local pid_prefix = ARGV[2]
local count = tonumber(ARGV[3])
local wake_prefix = ARGV[4]
local publish = publish_command(ARGV[5])
local notify = ARGV[6]
local policy = cjson.decode(ARGV[7])
local full = ARGV[8] == '1'
local first_finish = 9  -- ARGV[9..n] finishes
J.processes, J.members, J.idle, J.config, J.stats, J.notify =
  processes, members, idle, config, stats, notify

-- The phases, in the order they run: finish (lib/finish), purge (lib/purge),
-- promote (lib/promote: due jobs, schedules and groups), limit (lib/limit), pick
-- (lib/fair's pick_next: lib/start's in queue order, or round robin between
-- groups when the queue has them), take (lib/start), wake.

-- wake(limits, micros, now, picked, promoted, done, timed): the rate's slots
--   spent; this worker in the idle set only if it drained the queue with room
--   left (it wants a wake-up); idle workers woken for work made ready and not
--   taken; the timer armed
local function wake(limits, micros, now, picked, promoted, done, timed)
  if limits then
    spend(J, limits, picked.n, micros)
  end
  -- A worker with no room (at its concurrency, or stopping) leaves the idle set
  -- too: left there, it could be the one woken for the work its finishes made
  -- ready. A call that only finishes (sent alone, room or not) changes nothing:
  -- taking it out would lose the wake-up its last take asked for.
  if count > 0 then
    local wants = picked.n < count and picked.more == 0
    redis.call(wants and 'SADD' or 'SREM', idle, worker)
  elseif full then
    redis.call('SREM', idle, worker)
  end
  -- made ready and not taken: promoted jobs, and keep_last follow-ups the finishes
  -- placed (lib/terminal's J.followed; a delayed one is timed work, below)
  local extra = promoted + (J.followed and J.followed[1] or 0) - picked.n
  if limits and count == 0 and done > 0 and limits.max_active
    and has_ready(J.tasks, J.prio) then
    extra = math.max(extra, 1)  -- room this call freed under max_active and does not take
  end
  extra = group_wake(J, count, extra)  -- a group's max_active freed; its reopening
  if extra > 0 then
    extra = allowance(J, limits, micros, extra)  -- no herd (spend moved limits.tat)
  end
  wake_idle(idle, wake_prefix, publish, extra)
  if timed or J.reopen then
    arm_timer(J, now, nil, wake_prefix, publish, policy.timer_grace)
  end
end

local limits, groups = read_limits(J, config)  -- and its groups and kind: no HGET more
local resent, refused = admit_take(J, 'jobs', worker, pid_prefix, 0, count)
if refused then
  return refused
end
local micros = now_us()  -- one clock reading: start times and the rate agree to the µs
local now = math.floor(micros / 1000)
local now_text = string.format('%d', now)
buffer_counters(J)  -- counts and stats: one HINCRBY per field at the end (flush_counters)

local finished, done = finish_jobs(J, owned, ARGV, first_finish, now, now_text, policy, publish)
if resent then
  local taken = replay_jobs(J, pid_prefix, count)
  flush_counters(J)
  return {finished, taken, 0, {}, J.ops, now}
end
-- A finishing take purges twice what it finishes (amortised O(1)); one that
-- finishes nothing (an idle member's poll, a wake-up) has time to spare and
-- purges a larger bounded batch, so an idle queue's backlog goes within a poll.
purge(J, now, done > 0 and math.max(policy.purge_budget, 2 * done) or policy.idle_purge, policy)
local promoted, refill, timed = promote_due(J, now, policy)
local allowed  -- all asked for, unless limits say fewer (finishes freed their room)
allowed, J.reopen = allowance(J, limits, micros, count)
local picked = pick_next(J, groups, allowed, pid_prefix, now_text, micros, policy.skip_budget)
local taken = start_jobs(J, picked, owned, seq, pid_prefix)
wake(limits, micros, now, picked, promoted, done, timed)
flush_counters(J)
return {finished, taken, picked.more, refill, J.ops, now}
