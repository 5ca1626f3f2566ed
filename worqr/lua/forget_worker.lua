-- forget_worker: remove a worker from the mesh registry, after its processes on
-- every queue were returned. Idempotent.
-- KEYS[1] workers        set     registered workers
-- KEYS[2] alive          string  the worker's liveness
-- KEYS[3] worker_queues  set     queues the worker works on
-- KEYS[4] worker_info    hash    the worker's host, pid and start time
-- ARGV[1] worker            the worker's id
-- ARGV[2] only_if_dead      '1': do nothing while the alive key exists
-- Reply: 1 if the worker was registered and is now forgotten, else 0.
-- Errors: none.
-- Events: none.
local workers = KEYS[1]
local alive = KEYS[2]
local worker_queues = KEYS[3]
local worker_info = KEYS[4]
local worker = ARGV[1]
local only_if_dead = ARGV[2] == '1'

if only_if_dead and redis.call('EXISTS', alive) == 1 then
  return 0
end
redis.call('DEL', alive, worker_queues, worker_info)
return redis.call('SREM', workers, worker)
