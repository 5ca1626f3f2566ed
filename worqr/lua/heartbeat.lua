-- heartbeat: refresh a worker's lease and try to take the mesh's reaper turn.
-- The lease is refreshed with PEXPIRE, not SET: Redis refuses commands that may
-- grow memory (SET) once maxmemory is reached under noeviction, and a worker
-- whose heartbeat is refused would stop draining the very queue that fills Redis.
-- KEYS[1] alive       string  the worker's liveness
-- KEYS[2] reaper      string  held by the one worker that reaps this interval
-- ARGV[1] worker            the worker's id
-- ARGV[2] ttl_ms            lease length
-- ARGV[3] reap_ms           length of one reaping interval
-- Reply: -1 the lease was lost (the alive key expired: the worker is failed);
--         1 lease refreshed and this worker reaps this interval;
--         0 lease refreshed, another worker reaps.
-- Errors: none.
-- Events: none.
local alive = KEYS[1]
local reaper = KEYS[2]
local worker = ARGV[1]
local ttl_ms = ARGV[2]
local reap_ms = ARGV[3]

if redis.call('PEXPIRE', alive, ttl_ms) == 0 then
  return -1
end
if redis.call('SET', reaper, worker, 'NX', 'PX', reap_ms) then
  return 1
end
return 0
