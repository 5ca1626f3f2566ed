-- register: add a new worker to the mesh with a fresh alive key.
-- KEYS[1] workers     set     registered workers
-- KEYS[2] alive       string  this worker's liveness, expires after ttl
-- KEYS[3] info        hash    this worker's host, pid and start time, for status
-- ARGV[1] worker_id
-- ARGV[2] ttl_ms
-- ARGV[3..n] field, value pairs for `info`
-- Reply: 1
-- Errors: WORQR_ID_TAKEN when the id is already alive (ids are never reused).
local workers = KEYS[1]
local alive = KEYS[2]
local info = KEYS[3]
local worker_id = ARGV[1]
local ttl_ms = ARGV[2]

if not redis.call('SET', alive, '1', 'NX', 'PX', ttl_ms) then
  return redis.error_reply('WORQR_ID_TAKEN')
end
redis.call('SADD', workers, worker_id)
if #ARGV > 2 then
  redis.call('HSET', info, unpack(ARGV, 3))
end
return 1
