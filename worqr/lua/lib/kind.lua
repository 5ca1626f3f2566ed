-- lib/kind: a queue is a task queue or a job queue, never both.
-- `config.kind` is 'jobs' on a job queue, 'tasks' on a queue that had tasks
-- enqueued (so the config hash moves with a migrating slot's other keys); a
-- queue without it is a task queue too.

-- not_a_job_queue(config) -> an error reply for a task operation on a job queue, or nil
local function not_a_job_queue(config)
  if redis.call('HGET', config, 'kind') == 'jobs' then
    return redis.error_reply('WORQR_JOB_QUEUE')
  end
  return nil
end

-- make_task_queue(config) -> an error reply for an enqueue on a job queue, or nil
local function make_task_queue(config)
  local kind = redis.call('HGET', config, 'kind')
  if kind == 'jobs' then
    return redis.error_reply('WORQR_JOB_QUEUE')
  end
  if not kind then
    redis.call('HSET', config, 'kind', 'tasks')
  end
  return nil
end

-- not_a_task_queue(config) -> an error reply for a job operation on a queue
--   that is not a job queue, or nil
local function not_a_task_queue(config)
  if redis.call('HGET', config, 'kind') ~= 'jobs' then
    return redis.error_reply('WORQR_TASK_QUEUE')
  end
  return nil
end

-- make_job_queue(config, tasks, processes) -> an error reply, or nil once the
--   queue is a job queue (made one now if it holds no tasks, queued or in process)
local function make_job_queue(config, tasks, processes)
  if redis.call('HGET', config, 'kind') == 'jobs' then
    return nil
  end
  if redis.call('LLEN', tasks) > 0 or redis.call('HLEN', processes) > 0 then
    return redis.error_reply('WORQR_TASK_QUEUE')
  end
  redis.call('HSET', config, 'kind', 'jobs')
  return nil
end
