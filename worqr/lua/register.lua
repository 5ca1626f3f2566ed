-- register: add a new worker to the mesh with a fresh alive key.
-- KEYS[1] workers      set     registered workers
-- KEYS[2] alive        string  this worker's liveness, expires after ttl
-- KEYS[3] worker_info  hash    this worker's host, pid and start time, for status
-- ARGV[1] worker            the new worker's id
-- ARGV[2] ttl_ms            lease length
-- ARGV[3..n] info           field, value pairs for `worker_info`
-- Reply: 1
-- Errors: WORQR_ID_TAKEN when the id is already alive (ids are never reused).
-- Events: none.
local workers = KEYS[1]
local alive = KEYS[2]
local worker_info = KEYS[3]
local worker = ARGV[1]
local ttl_ms = ARGV[2]
local first_info = 3  -- ARGV[3..n] info

if not redis.call('SET', alive, '1', 'NX', 'PX', ttl_ms) then
  return redis.error_reply('WORQR_ID_TAKEN')
end
redis.call('SADD', workers, worker)
if #ARGV >= first_info then
  redis.call('HSET', worker_info, unpack(ARGV, first_info))
end
return 1
