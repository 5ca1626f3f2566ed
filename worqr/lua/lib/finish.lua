-- lib/finish: a worker's batch of finished jobs (job_take's finish phase). The
-- processes' entries and the jobs' hot fields are read in one call each; the
-- writes are one call each, after the loop (a flow's job stores its result
-- first: its hop passes it on). A plain job (lib/jobs) ends on its hot fields
-- alone; any other is loaded and saved whole. J as in lib/terminal, with
-- J.processes.
--!include jobs
--!include terminal

-- end_whole(J, id, kind, value, now, policy, publish) -> whether it stored the
--   result (a flow's job does): a job not plain ends, loaded and saved whole
local function end_whole(J, id, kind, value, now, policy, publish)
  local record = load_job(J.jobs, id)
  if record.g and kind == 'n' then
    redis.call('HDEL', J.result, id)
  elseif record.g then
    redis.call('HSET', J.result, id, value)
  end
  record.y = kind
  record.E = nil
  end_job(J, id, record, 'f', now, policy, publish)
  save_job(J.jobs, id, record)
  return record.g ~= nil
end

-- store_batch(J, owned, ended, hots, purges, stored, unstored): the writes, one
--   call each
local function store_batch(J, owned, ended, hots, purges, stored, unstored)
  if #ended > 0 then
    redis.call('ZREM', owned, unpack(ended))
    redis.call('HDEL', J.processes, unpack(ended))
  end
  if #hots > 0 then
    redis.call('HSET', J.jobs, unpack(hots))
    redis.call('ZADD', J.finished, unpack(purges))
  end
  if #stored > 0 then
    redis.call('HSET', J.result, unpack(stored))
  end
  if #unstored > 0 then
    redis.call('HDEL', J.result, unpack(unstored))  -- a result of an earlier life
  end
end

-- finish_jobs(J, owned, args, first, now, now_text, policy, publish) -> finished, done
--   args[first..]: four per finish (pid, entry, result type, result). finished:
--   per finish, 1 ended now, 0 fenced (no such process), 2 already finished by
--   this pid (a resend, or twice in this call); done: how many ended now.
local function finish_jobs(J, owned, args, first, now, now_text, policy, publish)
  local finished, ended, hots, purges, stored, unstored = {}, {}, {}, {}, {}, {}
  local ended_now = {}  -- pid -> true: a pid sent twice in one call is a resend
  local pids, ids, lives, fields = {}, {}, {}, {}
  for i = first, #args, 4 do
    local k = #pids + 1
    pids[k] = args[i]
    ids[k], lives[k] = entry_parts(args[i + 1])
    fields[k] = hot_field(ids[k])
  end
  local entries_now = #pids > 0 and redis.call('HMGET', J.processes, unpack(pids)) or {}
  local hots_now = #pids > 0 and redis.call('HMGET', J.jobs, unpack(fields)) or {}
  local plain_purge = nil  -- every plain finish of this call has the same purge time
  for k = 1, #pids do
    local i = first + 4 * (k - 1)
    local pid, id, kind, value = pids[k], ids[k], args[i + 2], args[i + 3]
    local state, hot_life, kept, is_plain, hot_pid = nil, nil, nil, nil, nil
    if hots_now[k] then
      state, hot_life, kept, is_plain, hot_pid = hot_parts(hots_now[k])
    end
    if ended_now[pid] then
      finished[k] = 2
    elseif entries_now[k] ~= args[i + 1] then
      finished[k] = (state == 'f' and hot_life == lives[k] and hot_pid == pid) and 2 or 0
    else
      ended_now[pid] = true
      ended[#ended + 1] = pid
      local kept_result = false
      if is_plain == '1' then
        local purge_at = mark_ended(J, {s = state}, 'f', now, policy)
        plain_purge = plain_purge or string.format('%d', purge_at)
        purges[#purges + 1], purges[#purges + 2] = purge_at, id
        hots[#hots + 1] = fields[k]
        hots[#hots + 1] = finished_hot(hot_life, kept, now_text, plain_purge, kind, hot_pid)
      else
        kept_result = end_whole(J, id, kind, value, now, policy, publish)
      end
      if kept_result then
        -- a flow's job stored it first: its hop passes it on
      elseif kind == 'n' then
        unstored[#unstored + 1] = id  -- no result: an earlier life's goes
      else
        stored[#stored + 1], stored[#stored + 2] = id, value
      end
      finished[k] = 1
    end
  end
  store_batch(J, owned, ended, hots, purges, stored, unstored)
  return finished, #ended
end
