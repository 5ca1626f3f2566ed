-- job_cancel_many: one chunk of a bulk cancel (cancel_jobs): cancel the live jobs
--   of one state among at most `count` entries of its index, each as job_cancel
--   does (lib/cancel): an active job's process goes (its acknowledgement is fenced)
--   and its worker is told; records are kept per retention; unique markers are
--   released; a flow's jobs write their hops. Cancelled jobs leave their index, so
--   the caller calls again until `left` is 0 (active: until the cursor is '0')
--   or it has looked at as many entries as the index held when it began.
--   Queued: prioritised entries first, then the list from its front (RPOP, so the
--   list's tombstones go too). Counts move job by job: exact after every call.
-- Cost: O(count) (O(count log N) for the zsets): one bounded call per chunk.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] processes     hash    process id -> entry
-- KEYS[17] stats         hash    lifetime counters of the queue, by event
-- KEYS[18..23] flow_keys the queue's flow keys (lib/flow)
-- KEYS[24] config        hash    per-queue options; 'kind' is 'jobs' on a job queue
-- ARGV[1] state             'd' delayed, 'q' queued, 'r' retrying, 'w' waiting, 'a' active
-- ARGV[2] count             index entries looked at, at most (>= 1)
-- ARGV[3] cursor            active: where the scan of processes goes on ('0': the
--                           start); the other states: '0'
-- ARGV[4] events            broadcast channel of the queue
-- ARGV[5] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[6] notify            the queue's channel for waiters
-- ARGV[7] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- Reply: {cancelled, looked, left, cursor, ops}: jobs cancelled; entries looked
--   at; entries left in the index; the next cursor (active; '0' when the scan is
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
--!include cancel
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
  local looked = from_zset(J.prio, true, count)
  local popped = count > looked and redis.call('RPOP', J.tasks, count - looked) or false
  for _, entry in ipairs(popped or {}) do
    local id, life = split_entry(entry)
    cancel(id, life)  -- a tombstone cancels nothing, and is gone
  end
  reply[2] = reply[2] + #(popped or {})
  reply[3] = redis.call('LLEN', J.tasks) + redis.call('ZCARD', J.prio)
elseif state == 'w' then
  from_zset(J.waiting, false, count)
  reply[3] = redis.call('ZCARD', J.waiting)
else
  local zset = state == 'd' and J.delayed or J.retrying
  from_zset(zset, true, count)
  reply[3] = redis.call('ZCARD', zset)
end
return reply
