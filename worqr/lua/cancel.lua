-- cancel: remove every queued copy of a task and end every in-process copy.
-- A cancelled process is deleted at once, so it is never requeued, even if its
-- worker dies afterwards, and its worker's finish/stop are fenced (reply 0).
-- Cost: O(queue length + processes of this queue); not a hot-path operation.
-- KEYS[1] tasks       list  queued tasks
-- KEYS[2] processes   hash  process id -> task
-- KEYS[3] recoveries  hash  task -> times recovered from a dead worker
-- KEYS[4] stats       hash  lifetime counters of the queue, by event
-- KEYS[5] config      hash  per-queue options; 'kind' is 'jobs' on a job queue
-- ARGV[1] task              the payload to cancel (exact bytes)
-- ARGV[2] events            broadcast channel of the queue
-- ARGV[3] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: {removed_from_queue, pid1, pid2, ...} (the cancelled process ids)
-- Errors: WORQR_JOB_QUEUE when the queue is a job queue (job_cancel_payload is its cancel).
-- Events: 'cancel:<pid> <pid> ...' on `events` when in-process copies were cancelled.
--!include publish
--!include kind
local tasks = KEYS[1]
local processes = KEYS[2]
local recoveries = KEYS[3]
local stats = KEYS[4]
local config = KEYS[5]
local task = ARGV[1]
local events = ARGV[2]
local publish = publish_command(ARGV[3])

local refused = wrong_kind(config, 'tasks')
if refused then
  return refused
end

local reply = {redis.call('LREM', tasks, 0, task)}
local cursor = '0'
repeat
  local page = redis.call('HSCAN', processes, cursor, 'COUNT', 1000)
  cursor = page[1]
  local entries = page[2]
  for i = 1, #entries, 2 do
    if entries[i + 1] == task then
      reply[#reply + 1] = entries[i]
    end
  end
until cursor == '0'

for i = 2, #reply do
  redis.call('HDEL', processes, reply[i])
end
redis.call('HDEL', recoveries, task)
local cancelled = reply[1] + #reply - 1
if cancelled > 0 then
  redis.call('HINCRBY', stats, 'cancelled', cancelled)
end
if #reply > 1 then
  redis.call(publish, events, 'cancel:' .. table.concat(reply, ' ', 2))
end
return reply
