-- delete_queue: drop a queue's tasks, processes and bookkeeping, and tell listeners.
-- In-process copies end with it: their finish/stop are fenced (reply 0).
-- KEYS[1] tasks       list    queued tasks
-- KEYS[2] processes   hash    process id -> task
-- KEYS[3] members     set     workers allowed to dequeue from this queue
-- KEYS[4] idle        set     workers of this queue waiting for work
-- KEYS[5] recoveries  hash    task -> times recovered from a dead worker
-- KEYS[6] failed      list    dead letters
-- KEYS[7] config      hash    per-queue options
-- KEYS[8] stats       hash    lifetime counters of the queue, by event
-- KEYS[9] seq         string  per-queue dequeue counter
-- KEYS[10..n] owned   zset    each member's process ids on this queue
-- ARGV[1] events            broadcast channel of the queue
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: integer, number of keys deleted.
-- Errors: none.
-- Events: 'delete' on `events`.
--!include publish
local tasks = KEYS[1]
local processes = KEYS[2]
local members = KEYS[3]
local idle = KEYS[4]
local recoveries = KEYS[5]
local failed = KEYS[6]
local config = KEYS[7]
local stats = KEYS[8]
local seq = KEYS[9]
local first_owned = 10  -- KEYS[10..n] owned, one per member
local events = ARGV[1]
local publish = publish_command(ARGV[2])

local deleted = redis.call('DEL', tasks, processes, members, idle, recoveries, failed, config,
  stats, seq)
for i = first_owned, #KEYS do
  deleted = deleted + redis.call('DEL', KEYS[i])
end
redis.call(publish, events, 'delete')
return deleted
