-- job_outbox_age: how many flow hops wait in the queue's outbox, and how long the
--   oldest has waited past its relay lease (0 while every hop is within it): a hop
--   no relay applied. Read only (the exporter's scrape).
-- KEYS[1] job_outbox      zset    operations for other queues -> when a relay may take them
-- Reply: {entries, overdue_ms}
-- Errors: none.
-- Events: none.
--!include clock
local job_outbox = KEYS[1]

local head = redis.call('ZRANGE', job_outbox, 0, 0, 'WITHSCORES')
local overdue = 0
if head[2] then
  overdue = math.max(0, now_ms() - tonumber(head[2]))
end
return {redis.call('ZCARD', job_outbox), overdue}
