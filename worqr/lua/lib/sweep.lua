-- lib/sweep: a bulk operation's walk over one state's index (job_cancel_many),
-- a bounded chunk per call. W, the walk: {count = entries it may look at in the
-- call, looked = entries looked at so far, visit = function(id, life) (life nil:
-- any life; a tombstone's or stale entry's visit does nothing)}. Queued entries
-- are walked as lib/ready orders them: the priority zset first, then the list
-- from its front (RPOP, so its tombstones go too); then, on a queue with groups,
-- each group's ready keys the same way, the groups in HSCAN pages of `grp`.
--!include jobs
--!include group

-- sweep_zset(W, zset, by_entry, n) -> how many: the first n members visited (by
--   entry, or by id), and out of the zset (stale members too)
local function sweep_zset(W, zset, by_entry, n)
  local members = redis.call('ZRANGE', zset, 0, n - 1)
  for _, member in ipairs(members) do
    if by_entry then
      W.visit(split_entry(member))
    else
      W.visit(member, nil)
    end
  end
  if #members > 0 then
    redis.call('ZREM', zset, unpack(members))
  end
  W.looked = W.looked + #members
  return #members
end

-- sweep_zset_from(W, zset, by_entry, at, n) -> the next offset: up to n members
--   from offset `at` visited (by entry, or by id); those the visit leaves (it
--   returns false: another group's, a stale member) stay, and the offset passes
--   them; the visited ones left the zset themselves (lib/cancel)
local function sweep_zset_from(W, zset, by_entry, at, n)
  local members = redis.call('ZRANGE', zset, at, at + n - 1)
  for _, member in ipairs(members) do
    local id, life = member, nil
    if by_entry then
      id, life = split_entry(member)
    end
    if not W.visit(id, life) then
      at = at + 1
    end
  end
  W.looked = W.looked + #members
  return at
end

-- sweep_ready(W, ready, prio, n) -> entries left in these ready keys, after
--   visiting up to n of them
local function sweep_ready(W, ready, prio, n)
  local looked = sweep_zset(W, prio, true, n)
  local popped = n > looked and redis.call('RPOP', ready, n - looked) or false
  for _, entry in ipairs(popped or {}) do
    W.visit(split_entry(entry))
  end
  W.looked = W.looked + #(popped or {})
  return redis.call('LLEN', ready) + redis.call('ZCARD', prio)
end

-- drop_ungrouped(J, now): no ungrouped job is ready: '' leaves the ring (through
--   J.ring_out when set), and its record (which holds no counts) goes
local function drop_ungrouped(J, now)
  if redis.call('HEXISTS', J.grp, '') == 0 then
    return
  end
  local rec = load_group(J, '')
  if rec.w == 'r' then
    if J.ring_out then
      J.ring_out[#J.ring_out + 1] = ''
    else
      redis.call('LREM', J.ring, 1, '')
    end
    rec.w = nil
  end
  save_group(J, '', rec, now)
end

-- leave_ring_all(J): the groups listed in J.ring_out (lib/group's place_group)
--   leave the ring, one entry per listing, in one pass: one LREM for one group,
--   else the ring read once and written again without them (O(ring) for the
--   call, where an LREM each is O(ring) each: a bulk cancel of G groups was
--   O(G * ring)). A group that came back in the same call has two entries by
--   then and keeps one. Order is kept: the ring's rotation goes on unchanged.
local function leave_ring_all(J)
  local out = J.ring_out
  J.ring_out = nil
  if #out <= 1 then
    if out[1] then
      redis.call('LREM', J.ring, 1, out[1])
    end
    return
  end
  local drop = {}
  for _, g in ipairs(out) do
    drop[g] = (drop[g] or 0) + 1
  end
  local kept = {}
  for _, g in ipairs(redis.call('LRANGE', J.ring, 0, -1)) do
    if (drop[g] or 0) > 0 then
      drop[g] = drop[g] - 1
    else
      kept[#kept + 1] = g
    end
  end
  redis.call('DEL', J.ring)
  for i = 1, #kept, 1000 do  -- unpack's stack is bounded
    redis.call('RPUSH', J.ring, unpack(kept, i, math.min(i + 999, #kept)))
  end
end

-- sweep_groups(W, J, at) -> the next cursor: the groups of one HSCAN page of `grp`
--   from `at`, each one's queued jobs visited, until W.count entries were looked
--   at in the call; `at` again when the page is left unfinished (the next call
--   scans it again: groups emptied are gone from it)
local function sweep_groups(W, J, at)
  local page = redis.call('HSCAN', J.grp, at, 'COUNT', 100)
  local fields = page[2]
  for i = 1, #fields, 2 do
    local g = fields[i]
    if g ~= '' and cjson.decode(fields[i + 1]).q > 0 then
      local budget = W.count - W.looked
      if budget <= 0 then
        return at
      end
      local ready, prio = group_ready_keys(J, g)
      if sweep_ready(W, ready, prio, budget) > 0 then
        return at  -- the budget ran out inside this group
      end
    end
  end
  return page[1]
end
