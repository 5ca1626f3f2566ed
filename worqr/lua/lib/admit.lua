-- lib/admit: whether a call may take from a queue (dequeue, complete, job_take).
-- Process ids are client-chosen (pid_prefix .. first + 1, ...): a resent call
-- finds what the first one took (a lost reply never hides a task or a job).
--!include kind

-- admit_take(Q, kind, worker, pid_prefix, first, count) -> resent, refusal
--   Q: the queue's tasks, processes, members and config keys, and Q.kind when
--   the caller read the config already (lib/limit's read_limits); kind: 'tasks' or
--   'jobs'. A call that takes nothing (count 0) is admitted. resent: this take
--   already ran (reply what it took). refusal: WORQR_NOT_MEMBER, or the queue is
--   of the other kind (lib/kind: a new queue becomes a job queue), else nil.
local function admit_take(Q, kind, worker, pid_prefix, first, count)
  if count <= 0 then
    return false, nil
  end
  if redis.call('HEXISTS', Q.processes, pid_prefix .. (first + 1)) == 1 then
    return true, nil  -- its first process exists: a take under this prefix ran
  end
  if redis.call('SISMEMBER', Q.members, worker) == 0 then
    return false, redis.error_reply('WORQR_NOT_MEMBER')
  end
  if kind == 'jobs' then
    return false, claim_kind(Q.config, kind, Q.tasks, Q.processes, Q.kind)
  end
  return false, wrong_kind(Q.config, kind)
end
