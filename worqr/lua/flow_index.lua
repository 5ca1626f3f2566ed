-- flow_index: the mesh's index of flows: which jobs (queue, id) make each one, so
--   get_flow and cancel_flow find them from the flow's id alone. Entries are
--   forgotten `ttl_ms` after they were added (each add forgets a few expired).
-- KEYS[1] flows           hash    flow id -> JSON {k kind, j [[queue, id], ...], c cancelled}
-- KEYS[2] flows_purge     zset    flow id -> when its entry is forgotten (server ms)
-- ARGV[1] mode              'add' (once per id) or 'cancel' (mark it cancelled)
-- ARGV[2] id                the flow's id
-- ARGV[3] spec              JSON of the entry ('add'), or ''
-- ARGV[4] ttl_ms            how long the entry is kept ('add')
-- Reply: 1 when added (or marked), 0 when it existed (or, to mark, did not).
-- Errors: none.
-- Events: none.
--!include clock
local flows = KEYS[1]
local flows_purge = KEYS[2]
local mode = ARGV[1]
local id = ARGV[2]
local spec = ARGV[3]
local ttl_ms = tonumber(ARGV[4])

local now = now_ms()
if mode == 'cancel' then
  local raw = redis.call('HGET', flows, id)
  if not raw then
    return 0
  end
  local entry = cjson.decode(raw)
  entry.c = 1
  redis.call('HSET', flows, id, cjson.encode(entry))
  return 1
end
local expired = redis.call('ZRANGEBYSCORE', flows_purge, '-inf', now, 'LIMIT', 0, 16)
if #expired > 0 then
  redis.call('HDEL', flows, unpack(expired))
  redis.call('ZREM', flows_purge, unpack(expired))
end
if redis.call('HSETNX', flows, id, spec) == 0 then
  return 0
end
redis.call('ZADD', flows_purge, now + ttl_ms, id)
return 1
