-- lib/wake: wake idle workers of a queue.
-- wake_idle(idle, wake_prefix, publish, count)
--   Pops at most `count` workers from the queue's idle set and publishes 'work:<count>'
--   on each one's wake channel (wake_prefix .. worker id). One wake-up per unit of new
--   work at most, never a broadcast: a busy worker is not in the set and pulls on its own.
--   A count of 0 wakes no one and calls nothing.
local function wake_idle(idle, wake_prefix, publish, count)
  if count <= 0 then
    return
  end
  local woken = redis.call('SPOP', idle, count)
  for _, worker in ipairs(woken) do
    redis.call(publish, wake_prefix .. worker, 'work:' .. count)
  end
end
