-- lib/follow: a keep_last key's follow-up job (lib/dedup) waits, in job_waiting,
-- until the run before it ends; then it takes the key's marker and is queued (or
-- delayed, when its own due time is later). J as in lib/terminal; the scripts
-- that can wake workers announce J.followed (ready, delayed) themselves, the
-- others leave the follow-up to the next take (a finishing take picks it).
--!include jobs
--!include counters
--!include group

-- follow_up(J, marker, entry, now): the run holding `marker` (a field of J.unique)
--   ended; its follow-up `entry` (id#life), if still waiting, is placed now
local function follow_up(J, marker, entry, now)
  local id, life = split_entry(entry)
  local record = load_job(J.jobs, id)
  if not is_live(record, life) or record.s ~= 'w' then
    return  -- cancelled meanwhile
  end
  redis.call('ZREM', J.waiting, id)
  local due = record.v or now
  local followed = J.followed or {0, 0}
  J.followed = followed
  if due > now then
    record.s = 'd'
    redis.call('ZADD', J.delayed, due, entry)
    followed[2] = followed[2] + 1
  else
    record.s = 'q'
    record.v = now
    make_ready(J, record, entry, false)
    followed[1] = followed[1] + 1
  end
  move(J, 'w', record.s)
  group_move(J, record, 'w', record.s, now)
  redis.call('HSET', J.unique, marker, entry)
  save_job(J.jobs, id, record)
end
