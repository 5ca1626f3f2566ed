-- lib/promote: due delayed and retrying jobs become ready. J as in lib/job_keys,
-- with J.stats.
--!include jobs
--!include counters
--!include group

-- promote(J, now, chunk) -> how many became ready
--   At most `chunk` due jobs (delayed first, then retrying), each at the back of
--   its priority; they leave their zset in the same script that makes them ready.
local function promote(J, now, chunk)
  local promoted = 0
  for _, pair in ipairs({{J.delayed, 'd'}, {J.retrying, 'r'}}) do
    local zset, state = pair[1], pair[2]
    local left = chunk - promoted
    if left <= 0 then break end
    local due = redis.call('ZRANGEBYSCORE', zset, '-inf', now, 'WITHSCORES', 'LIMIT', 0, left)
    if #due > 0 then
      local entries = {}
      for i = 1, #due, 2 do
        local entry = due[i]
        entries[#entries + 1] = entry
        local id, life = split_entry(entry)
        local record = load_job(J.jobs, id)
        -- Another life or state: a stale member (a cancel removes it; never run it).
        if record and record.l == life and record.s == state then
          move(J, state, 'q')
          record.s = 'q'
          record.v = tonumber(due[i + 1])
          make_ready(J, record, entry, false)
          group_move(J, record, state, 'q', now)
          save_job(J.jobs, id, record)
          promoted = promoted + 1
        end
      end
      redis.call('ZREM', zset, unpack(entries))
    end
  end
  stat(J, 'promoted', promoted)
  return promoted
end
