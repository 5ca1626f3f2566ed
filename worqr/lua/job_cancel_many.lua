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
-- Cost: O(count) (O(count log N) for the zsets): one bounded call per chunk.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- KEYS[18..23] flow_keys the queue's flow keys (lib/flow)
-- KEYS[24] config        hash    per-queue options; 'kind' is 'jobs' on a job queue
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
-- Reply: {cancelled, looked, left, cursor, ops}: jobs cancelled; entries looked
--   at; entries left in the index (queued: the ungrouped entries and the queued
--   count, an upper bound); the next cursor (active, queued; '0' when the scan is
--   over); ops three per outbox operation written (lib/flow), which the caller
--   relays at once.
--   A resend cancels nothing twice (a cancelled job is no longer live).
-- Errors: WORQR_TASK_QUEUE when the queue is not a job queue.
-- Events: 'cancel:<pid>' on events per active job; 'done:<id>' on notify per job
--   someone waits for.
--!include publish
--!include clock
--!include kind
--!include job_keys
--!include flow
--!include jobs
--!include counters
--!include cancel
--!include group
local J = job_keys()
local processes = KEYS[16]
local stats = KEYS[17]
flow_keys(J, 18)
local config = KEYS[24]

local state = ARGV[1]
local count = tonumber(ARGV[2])
local cursor = ARGV[3]
local events = ARGV[4]
local publish = publish_command(ARGV[5])
local notify = ARGV[6]
local policy = cjson.decode(ARGV[7])
J.stats, J.notify = stats, notify

local refused = wrong_kind(config, 'jobs')
if refused then
  return refused
end
local now = now_ms()
local reply = {0, 0, 0, '0', J.ops}

-- cancel(id, life): the job, when it is still `state` in that life (nil: any life)
local function cancel(id, life)
  local record = load_job(J.jobs, id)
  if not (record and record.s == state and (life == nil or record.l == life)) then
    return false
  end
  cancel_job(J, id, record, now, policy, publish, processes, events)
  save_job(J.jobs, id, record)
  reply[1] = reply[1] + 1
  return true
end

-- from_zset(zset, by_entry): the first `count` members; each leaves the zset
local function from_zset(zset, by_entry, n)
  local members = redis.call('ZRANGE', zset, 0, n - 1)
  for _, member in ipairs(members) do
    if by_entry then
      local id, life = split_entry(member)
      cancel(id, life)
    else
      cancel(member, nil)
    end
  end
  if #members > 0 then
    redis.call('ZREM', zset, unpack(members))  -- stale members too
  end
  reply[2] = reply[2] + #members
  return #members
end

-- from_ready(ready, prio, n) -> entries left in these ready keys, after cancelling
--   up to n: prioritised entries first, then the list from its front (RPOP, so its
--   tombstones go too)
local function from_ready(ready, prio, n)
  local looked = from_zset(prio, true, n)
  local popped = n > looked and redis.call('RPOP', ready, n - looked) or false
  for _, entry in ipairs(popped or {}) do
    local id, life = split_entry(entry)
    cancel(id, life)  -- a tombstone cancels nothing, and is gone
  end
  reply[2] = reply[2] + #(popped or {})
  return redis.call('LLEN', ready) + redis.call('ZCARD', prio)
end

-- drop_ungrouped_member(): no ungrouped job is ready: '' leaves the ring, and its
--   record (which holds no counts) goes
local function drop_ungrouped_member()
  if redis.call('HEXISTS', J.grp, '') == 0 then
    return
  end
  local rec = load_group(J, '')
  if rec.w == 'r' then
    redis.call('LREM', J.ring, 1, '')
    rec.w = nil
  end
  save_group(J, '', rec, now)
end

-- from_groups(at) -> the next cursor: the groups of one HSCAN page of `grp` from
--   `at`, each one's queued jobs cancelled (lib/cancel moves its counts and its
--   place), up to `count` entries looked at in the call; `at` again when the page
--   is left unfinished
local function from_groups(at)
  local page = redis.call('HSCAN', J.grp, at, 'COUNT', 100)
  local fields = page[2]
  for i = 1, #fields, 2 do
    local g = fields[i]
    if g ~= '' and cjson.decode(fields[i + 1]).q > 0 then
      local budget = count - reply[2]
      if budget <= 0 then
        return at
      end
      local ready, prio = group_ready_keys(J, g)
      if from_ready(ready, prio, budget) > 0 then
        return at  -- the budget ran out inside this group
      end
    end
  end
  return page[1]
end

if state == 'a' then
  local scanned = redis.call('HSCAN', processes, cursor, 'COUNT', count)
  for i = 2, #scanned[2], 2 do
    local id, life = split_entry(scanned[2][i])
    cancel(id, life)
    reply[2] = reply[2] + 1
  end
  reply[3] = redis.call('HLEN', processes)
  reply[4] = scanned[1]
elseif state == 'q' then
  local ungrouped = from_ready(J.tasks, J.prio, count)
  reply[3] = ungrouped
  if grouped(J) then
    if ungrouped == 0 then
      drop_ungrouped_member()
      reply[4] = reply[2] < count and from_groups(cursor) or cursor
    end
    reply[3] = ungrouped + tonumber(redis.call('HGET', J.counts, state_name('q')) or '0')
  end
elseif state == 'w' then
  from_zset(J.waiting, false, count)
  reply[3] = redis.call('ZCARD', J.waiting)
else
  local zset = state == 'd' and J.delayed or J.retrying
  from_zset(zset, true, count)
  reply[3] = redis.call('ZCARD', zset)
end
return reply
