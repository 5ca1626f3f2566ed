-- lib/release: a worker's processes on one queue go back, one chunk per call
-- (requeue_owned for tasks, job_requeue_owned for jobs). mode: 'fail' (a peer
-- fails a dead worker), 'leave' (the worker stops working the queue) or
-- 'release' (it hands its processes back and stays).
--!include kind
--!include wake

-- start_release(kind, config, members, idle, worker, mode) -> an error reply, or nil
--   A queue of the other kind refuses (kind: 'tasks' or 'jobs', what the caller
--   returns). Unless the worker only releases, it is fenced first: from now on it
--   cannot take from the queue.
local function start_release(kind, config, members, idle, worker, mode)
  local refused = wrong_kind(config, kind)
  if refused then
    return refused
  end
  if mode ~= 'release' then
    redis.call('SREM', members, worker)
    redis.call('SREM', idle, worker)
  end
  return nil
end

-- newest_owned(owned, chunk) -> the worker's newest `chunk` process ids: each goes
--   back to the front in turn, so the oldest ends up next
local function newest_owned(owned, chunk)
  return redis.call('ZREVRANGE', owned, 0, chunk - 1)
end

-- returned(stats, idle, wake_prefix, publish, mode, count): `count` processes went
--   back to the queue: counted ('recovered' from a failed worker, else
--   'released'), and one idle worker woken per process at most
local function returned(stats, idle, wake_prefix, publish, mode, count)
  if count > 0 then
    redis.call('HINCRBY', stats, mode == 'fail' and 'recovered' or 'released', count)
    wake_idle(idle, wake_prefix, publish, count)
  end
end
