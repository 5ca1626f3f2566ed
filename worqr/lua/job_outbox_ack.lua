-- job_outbox_ack: outbox operations a relay applied are gone. Idempotent.
-- KEYS[1] job_outbox      zset    operations for other queues -> when a relay may take them
-- KEYS[2] job_outbox_data hash    operation id -> header JSON
-- KEYS[3] job_outbox_body hash    operation id -> body (a result passed on)
-- ARGV[1..n] ops            the operation ids
-- Reply: how many were still there.
-- Errors: none.
-- Events: none.
local job_outbox = KEYS[1]
local job_outbox_data = KEYS[2]
local job_outbox_body = KEYS[3]
local first_op = 1  -- ARGV[1..n] ops

local removed = redis.call('ZREM', job_outbox, unpack(ARGV, first_op))
redis.call('HDEL', job_outbox_data, unpack(ARGV, first_op))
redis.call('HDEL', job_outbox_body, unpack(ARGV, first_op))
return removed
