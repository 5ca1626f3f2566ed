-- job_cancel_many: one chunk of a bulk cancel (cancel_jobs): cancel the live jobs
--   of one state among at most `count` entries of its index, each as job_cancel
--   does (lib/cancel): an active job's process goes (its acknowledgement is fenced)
--   and its worker is told; records are kept per retention; unique markers are
--   released; a flow's jobs write their hops. Cancelled jobs leave their index, so
--   the caller calls again until `left` is 0 (active: until the cursor is '0')
--   or it has looked at as many entries as the index held when it began.
--   Queued: prioritised entries first, then the list from its front (RPOP, so the
--   list's tombstones go too); then, on a queue with groups, each group's ready
--   keys the same way, the groups walked with HSCAN of `grp` (the cursor): a page
--   left unfinished is scanned again by the next call (emptied groups are gone
--   from it). A group emptied leaves the ring and, with nothing left, its record
--   goes (lib/group); the member '' of ungrouped jobs goes when none is ready.
--   Counts (the queue's and each group's) move job by job: exact after every call.
--   With a group (ARGV[8]): that group's jobs only: queued, its own ready keys;
--   delayed, retrying and waiting, the index from an offset (the cursor), other
--   groups' entries passed over and left; active, the scan as above.
-- Cost: O(count) (O(count log N) for the zsets): one bounded call per chunk.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- KEYS[18..23] flow_keys the queue's flow keys (lib/flow)
-- KEYS[24] config        hash    per-queue options; 'kind' is 'jobs' on a job queue
-- KEYS[25] members       set     workers of this queue
-- KEYS[26] idle          set     members waiting for work
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] state             'd' delayed, 'q' queued, 'r' retrying, 'w' waiting, 'a' active
-- ARGV[2] count             index entries looked at, at most (>= 1)
-- ARGV[3] cursor            active: where the scan of processes goes on; queued:
--                           where the scan of the groups goes on ('0': the start);
--                           the other states: '0'
-- ARGV[4] events            broadcast channel of the queue
-- ARGV[5] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[6] notify            the queue's channel for waiters
-- ARGV[7] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[8] group             the one group whose jobs are cancelled; '': every job
-- ARGV[9] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- Reply: {cancelled, looked, left, cursor, ops}: jobs cancelled; entries looked
--   at; entries left in the index (queued: the ungrouped entries and the queued
--   count, an upper bound; with a group: its ready entries, or the index's entries
--   past the offset); the next cursor (active, queued; with a group, delayed,
--   retrying and waiting: the offset; '0' when the scan is over); ops three per outbox operation written (lib/flow), which the caller
--   relays at once.
--   A resend cancels nothing twice (a cancelled job is no longer live).
-- Errors: WORQR_TASK_QUEUE when the queue is not a job queue.
-- Events: 'cancel:<pid>' on events per active job; 'done:<id>' on notify per job
--   someone waits for; 'work:<n>' to idle workers, or 'due:<ms>', for the
--   keep_last follow-ups the cancels placed (lib/terminal), as job_cancel.
--!include publish
--!include clock
--!include kind
--!include job_keys
--!include flow
--!include jobs
--!include counters
--!include cancel
--!include group
--!include sweep
--!include announce
local J = job_keys()
local processes = KEYS[16]
local stats = KEYS[17]
flow_keys(J, 18)
local config = KEYS[24]
local members = KEYS[25]
local idle = KEYS[26]

local state = ARGV[1]
local count = tonumber(ARGV[2])
local cursor = ARGV[3]
local events = ARGV[4]
local publish = publish_command(ARGV[5])
local notify = ARGV[6]
local policy = cjson.decode(ARGV[7])
local group = ARGV[8] ~= '' and ARGV[8] or nil
local wake_prefix = ARGV[9]
J.stats, J.notify, J.members, J.idle = stats, notify, members, idle

local refused = wrong_kind(config, 'jobs')
if refused then
  return refused
end
local now = now_ms()
local reply = {0, 0, 0, '0', J.ops}

-- cancel(id, life) -> whether the job was cancelled: when it is still `state` in
--   that life (nil: any life), and of `group` when one is given
local function cancel(id, life)
  local record = load_job(J.jobs, id)
  if not (record and record.s == state and (life == nil or record.l == life)) then
    return false
  end
  if group and record.G ~= group then
    return false
  end
  cancel_job(J, id, record, now, policy, publish, processes, events)
  save_job(J.jobs, id, record)
  reply[1] = reply[1] + 1
  return true
end
local W = {count = count, looked = 0, visit = cancel}  -- the walk (lib/sweep)

if state == 'a' then
  local scanned = redis.call('HSCAN', processes, cursor, 'COUNT', count)
  for i = 2, #scanned[2], 2 do
    cancel(split_entry(scanned[2][i]))
    W.looked = W.looked + 1
  end
  reply[3] = redis.call('HLEN', processes)
  reply[4] = scanned[1]
elseif group and state == 'q' then
  group_keys(J)
  local ready, prio = group_ready_keys(J, group)
  reply[3] = ready and sweep_ready(W, ready, prio, count) or 0  -- nil: the queue has no groups
elseif group then
  local zset = ({d = J.delayed, r = J.retrying, w = J.waiting})[state]
  local at = sweep_zset_from(W, zset, state ~= 'w', tonumber(cursor), count)
  reply[3] = math.max(0, redis.call('ZCARD', zset) - at)
  reply[4] = tostring(at)
elseif state == 'q' then
  local ungrouped = sweep_ready(W, J.tasks, J.prio, count)
  reply[3] = ungrouped
  if grouped(J) then
    if ungrouped == 0 then
      J.ring_out = {}  -- the groups emptied leave the ring together (lib/sweep)
      drop_ungrouped(J, now)
      reply[4] = W.looked < count and sweep_groups(W, J, cursor) or cursor
      leave_ring_all(J)
    end
    reply[3] = ungrouped + tonumber(redis.call('HGET', J.counts, state_name('q')) or '0')
  end
elseif state == 'w' then
  sweep_zset(W, J.waiting, false, count)
  reply[3] = redis.call('ZCARD', J.waiting)
else
  local zset = state == 'd' and J.delayed or J.retrying
  sweep_zset(W, zset, true, count)
  reply[3] = redis.call('ZCARD', zset)
end
reply[2] = W.looked
announce_followed(J, now, wake_prefix, publish, policy.timer_grace)
return reply
