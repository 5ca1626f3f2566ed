-- finish: end a process that completed. Fenced: only a process that still exists.
-- KEYS[1] processes   hash  process id -> task
-- KEYS[2] owned       zset  the owning worker's process ids on this queue
-- KEYS[3] recoveries  hash  task -> times recovered from a dead worker
-- KEYS[4] stats       hash  lifetime counters of the queue, by event
-- ARGV[1] pid
-- Reply: 1 if the process existed and is now finished, 0 if it no longer existed
--   (already finished, failed over to a peer, cancelled or deleted).
-- Errors: none.
-- Events: none.
--!include retire
local processes = KEYS[1]
local owned = KEYS[2]
local recoveries = KEYS[3]
local stats = KEYS[4]
local pid = ARGV[1]

if not retire_process(processes, owned, recoveries, pid) then
  return 0
end
redis.call('HINCRBY', stats, 'finished', 1)
return 1
