-- lib/chunk: one chunk of a bulk operation over one ended state's index
-- (job_purge_many, job_retry_many): the ids from offset `skip`, earliest first,
-- those passed over by earlier calls skipped by the offset. J as in lib/job_keys.
--!include jobs
--!include counters

-- walk_ended(J, state, skip, count, want, visit) -> acted, skipped, looked, remaining
--   Looks at up to `count` ids of `state`'s index from `skip`, stopping once
--   `want` were acted on. visit(id, record), for a record in `state`, answers
--   true (acted on), false (passed over) or nil (neither: gone uncounted). An
--   id with no record is a stray member and leaves the index; a record in another
--   state (a stale member of a newer life) is passed over. remaining: the
--   state's ids after those passed over.
local function walk_ended(J, state, skip, count, want, visit)
  local zset = J[state_name(state)]
  local acted, skipped, looked = 0, 0, 0
  for _, id in ipairs(redis.call('ZRANGE', zset, skip, skip + count - 1)) do
    if acted >= want then
      break
    end
    looked = looked + 1
    local record = load_job(J.jobs, id)
    if not record then
      redis.call('ZREM', zset, id)
    elseif record.s ~= state then
      skipped = skipped + 1
    else
      local done = visit(id, record)
      if done then
        acted = acted + 1
      elseif done == false then
        skipped = skipped + 1
      end
    end
  end
  return acted, skipped, looked, math.max(0, redis.call('ZCARD', zset) - skip - skipped)
end
