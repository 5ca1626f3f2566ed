-- lib/start: ready jobs start as processes of one worker, pid_prefix .. 1, 2, ...
-- (job_take's pick and take phases): entries popped a chunk at a time, their hot
-- fields read in one HMGET; records, processes, `owned` and payloads written and
-- read in one call each after the pick. J as in lib/job_keys, with J.processes, J.stats.
--!include jobs
--!include counters
--!include ready

-- pick_jobs(J, want, pid_prefix, now_text, skip_budget) -> picked
--   Up to `want` queued jobs, next in order (lib/ready), started now: n, their
--   ids, entries, attempts, hots and spawned (HSET pairs); more 1 when the skip
--   budget stopped it. Tombstones, older lives and a second entry of an id are skipped.
local function pick_jobs(J, want, pid_prefix, now_text, skip_budget)
  local got, skipped, more = 0, 0, 0
  local hots, spawned, ids, entries, attempts = {}, {}, {}, {}, {}
  local taken_now = {}
  while got < want and more == 0 do
    local popped = pop_ready_many(J.tasks, J.prio, want - got)
    if not popped then break end
    local chunk_ids, lives, fields = {}, {}, {}
    for k, entry in ipairs(popped) do
      chunk_ids[k], lives[k] = entry_parts(entry)
      fields[k] = hot_field(chunk_ids[k])
    end
    local raws = redis.call('HMGET', J.jobs, unpack(fields))
    for k, entry in ipairs(popped) do
      local id = chunk_ids[k]
      local pid = pid_prefix .. (got + 1)
      local hot, attempt = nil, nil
      if raws[k] and not taken_now[id] then
        hot, attempt = started_hot(raws[k], lives[k], now_text, pid)
      end
      if hot then
        taken_now[id] = true
        got = got + 1
        hots[#hots + 1], hots[#hots + 2] = fields[k], hot
        spawned[#spawned + 1], spawned[#spawned + 2] = pid, entry
        ids[got], entries[got], attempts[got] = id, entry, attempt
      else
        skipped = skipped + 1
      end
    end
    if skipped >= skip_budget then
      more = 1
    end
  end
  tally(J, 'q', -got)
  tally(J, 'a', got)
  return {n = got, more = more, hots = hots, spawned = spawned, ids = ids, entries = entries,
    attempts = attempts}
end

-- start_jobs(J, picked, owned, seq, pid_prefix) -> taken: five per job: pid,
--   entry, payload, its record's JSON field, attempt. The jobs become the
--   worker's processes, ranked in `owned` by the take counter `seq`.
local function start_jobs(J, picked, owned, seq, pid_prefix)
  local taken, got = {}, picked.n
  if got > 0 then
    redis.call('HSET', J.jobs, unpack(picked.hots))
    redis.call('HSET', J.processes, unpack(picked.spawned))
    local last = redis.call('INCRBY', seq, got)
    local ranked = {}
    for k = 1, got do
      ranked[2 * k - 1], ranked[2 * k] = last - got + k, pid_prefix .. k
    end
    redis.call('ZADD', owned, unpack(ranked))
    local payloads = redis.call('HMGET', J.data, unpack(picked.ids))
    local colds = redis.call('HMGET', J.jobs, unpack(picked.ids))
    for k = 1, got do
      local n = #taken
      taken[n + 1], taken[n + 2], taken[n + 3] = pid_prefix .. k, picked.entries[k], payloads[k] or ''
      taken[n + 4], taken[n + 5] = colds[k] or '{}', picked.attempts[k]
    end
  end
  stat(J, 'started', got)
  return taken
end

-- replay_jobs(J, pid_prefix, count) -> taken, as a take under this prefix
--   replied, of the jobs the worker still holds (a resend)
local function replay_jobs(J, pid_prefix, count)
  local taken = {}
  for k = 1, count do
    local pid = pid_prefix .. k
    local entry = redis.call('HGET', J.processes, pid)
    if not entry then break end
    local id = split_entry(entry)
    local raw = redis.call('HMGET', J.jobs, id, hot_field(id))
    local hot = raw[2] and parse_hot(raw[2])
    local n = #taken
    taken[n + 1], taken[n + 2], taken[n + 3] = pid, entry, redis.call('HGET', J.data, id) or ''
    taken[n + 4], taken[n + 5] = raw[1] or '{}', hot and hot.a or 0
  end
  return taken
end
