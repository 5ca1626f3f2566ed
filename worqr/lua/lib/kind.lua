-- lib/kind: a queue is a task queue or a job queue, never both.
-- `config.kind` is 'jobs' on a job queue, 'tasks' on a queue that had tasks
-- enqueued (so the config hash moves with a migrating slot's other keys); a
-- queue without it is a task queue too. `kind` below is what the caller works
-- with, 'tasks' or 'jobs'.

-- wrong_kind(config, kind) -> an error reply when the queue is not of `kind`
--   (WORQR_JOB_QUEUE, WORQR_TASK_QUEUE: the kind it is), or nil
local function wrong_kind(config, kind)
  local current = redis.call('HGET', config, 'kind')
  if kind == 'jobs' and current ~= 'jobs' then
    return redis.error_reply('WORQR_TASK_QUEUE')
  elseif kind == 'tasks' and current == 'jobs' then
    return redis.error_reply('WORQR_JOB_QUEUE')
  end
  return nil
end

-- claim_kind(config, kind, tasks, processes, current) -> an error reply, or nil
--   once the queue is of `kind`: any but a job queue becomes a task queue; one
--   holding no tasks, queued or in process, becomes a job queue. current: the
--   config's kind as the caller read it already (false: none), or nil: read here
local function claim_kind(config, kind, tasks, processes, current)
  if current == nil then
    current = redis.call('HGET', config, 'kind')
  end
  if current == kind then
    return nil
  elseif kind == 'tasks' then
    if current == 'jobs' then
      return redis.error_reply('WORQR_JOB_QUEUE')
    end
  elseif redis.call('LLEN', tasks) > 0 or redis.call('HLEN', processes) > 0 then
    return redis.error_reply('WORQR_TASK_QUEUE')
  end
  redis.call('HSET', config, 'kind', kind)
  return nil
end
