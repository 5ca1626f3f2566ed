-- requeue_failed: move one chunk of a queue's dead letters to the back of the
-- queue, oldest first, and wake idle workers. Each task moves atomically (LMOVE),
-- so a crash or a resend between calls never duplicates or loses one.
-- KEYS[1] failed      list  dead letters, newest on the left
-- KEYS[2] tasks       list  queued tasks (push left = back, pop right = front)
-- KEYS[3] idle        set   workers of this queue waiting for work
-- KEYS[4] stats       hash  lifetime counters of the queue, by event
-- ARGV[1] count             dead letters moved at most by this call
-- ARGV[2] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[3] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: {moved, remaining}  remaining = dead letters left on the failed list
-- Errors: none.
-- Events: 'work:<moved>' on the wake channel of each idle worker woken (at most one per task).
--!include publish
--!include wake
local failed = KEYS[1]
local tasks = KEYS[2]
local idle = KEYS[3]
local stats = KEYS[4]
local count = tonumber(ARGV[1])
local wake_prefix = ARGV[2]
local publish = publish_command(ARGV[3])

local moved = 0
while moved < count do
  -- The oldest dead letter is at the right end; it goes to the back (left end).
  if not redis.call('LMOVE', failed, tasks, 'RIGHT', 'LEFT') then
    break
  end
  moved = moved + 1
end

if moved > 0 then
  redis.call('HINCRBY', stats, 'redriven', moved)
  wake_idle(idle, wake_prefix, publish, moved)
end
return {moved, redis.call('LLEN', failed)}
