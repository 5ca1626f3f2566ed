-- job_outbox_claim: outbox operations for a relay to apply: those visible by
--   `horizon_ms` from now (0: stragglers only; the relay lease: fresh ones too),
--   each made invisible to other relays for `lease_ms`.
-- KEYS[1] job_outbox      zset    operations for other queues -> when a relay may take them
-- KEYS[2] job_outbox_data hash    operation id -> header JSON
-- KEYS[3] job_outbox_body hash    operation id -> body (a result passed on)
-- ARGV[1] lease_ms          how long the claimed operations stay invisible
-- ARGV[2] horizon_ms        claim operations visible within this many ms from now
-- ARGV[3] count             operations claimed at most
-- Reply: flat, three per operation: op id, header, body ('' when none).
-- Errors: none.
-- Events: none.
--!include clock
local job_outbox = KEYS[1]
local job_outbox_data = KEYS[2]
local job_outbox_body = KEYS[3]
local lease_ms = tonumber(ARGV[1])
local horizon_ms = tonumber(ARGV[2])
local count = tonumber(ARGV[3])

local now = now_ms()
local reply = {}
for _, op in ipairs(redis.call('ZRANGEBYSCORE', job_outbox, '-inf', now + horizon_ms, 'LIMIT', 0, count)) do
  local header = redis.call('HGET', job_outbox_data, op)
  if header then
    redis.call('ZADD', job_outbox, now + lease_ms, op)
    reply[#reply + 1] = op
    reply[#reply + 1] = header
    reply[#reply + 1] = redis.call('HGET', job_outbox_body, op) or ''
  else
    redis.call('ZREM', job_outbox, op)
  end
end
return reply
