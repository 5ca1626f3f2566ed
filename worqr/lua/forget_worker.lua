-- forget_worker: remove a worker from the mesh registry, after its processes on
-- every queue were returned. Idempotent.
-- KEYS[1] workers     set     registered workers
-- KEYS[2] alive       string  the worker's liveness
-- KEYS[3] wqueues     set     queues the worker works on
-- KEYS[4] info        hash    the worker's host, pid and start time
-- ARGV[1] worker_id
-- ARGV[2] only_if_dead      '1': do nothing while the alive key exists
-- Reply: 1 if the worker was registered and is now forgotten, else 0.
-- Errors: none.
if ARGV[2] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
return redis.call('SREM', KEYS[1], ARGV[1])
