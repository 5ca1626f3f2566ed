-- lib/group: fair-share groups of a job queue (a job's record field G). J as in
-- lib/job_keys. Keys named by data: every one starts with the queue's hash tag
-- `{P:Q}` (the `tasks` key without ':tasks'), so it lies in the queue's slot:
--   {P:Q}:grp          hash    group -> its record (JSON, below); '' is the member
--                              of ungrouped jobs while the queue has groups
--   {P:Q}:grp:ring     list    the groups that may start a job now, each once;
--                              the right end is the front (as `tasks`); also,
--                              left behind, groups paused or shut since (k)
--   {P:Q}:grp:timed    zset    groups closed by time (a rate, a RateLimited, or a
--                              rate's next slot still binding) -> reopen ms
--   {P:Q}:grp:<e>:r:<g> list   group g's ready entries at priority 0 (as `tasks`)
--   {P:Q}:grp:<e>:p:<g> zset   group g's ready entries with a priority (as `job_prio`)
--   {P:Q}:grp:graves   hash    epoch -> HSCAN cursor: the `grp` hashes of deleted
--                              incarnations, each renamed `{P:Q}:grp:<epoch>`, whose
--                              ready keys sweep_graves unlinks, a chunk per call
--   {P:Q}:config       hash    'groups' is the groups' epoch <e> while `grp` exists
--                              (the server's µs when the first record was made, never
--                              one of `graves`), so the ready keys of a deleted queue
--                              (delete_queue renames `grp`, the sweep comes later)
--                              are never those of the queue made again; the take
--                              reads it in lib/limit's HMGET: a queue without groups
--                              pays no command for them; 'groups_waiting' and
--                              'groups_limited': how many groups have queued jobs,
--                              and of those how many are 'f' or 't' (below), kept
--                              by save_group so the exporter reads them in O(1)
-- A group's record: q queued, d delayed or retrying, a active (exact counts); w
-- where: 'r' in the ring, 't' in timed (o: reopen ms), 'f' at its max_active,
-- absent: idle (nothing ready, or paused); p paused; m max_active, n rate starts
-- and s rate window ms (its own limits); tat the rate's next free slot (µs), sh
-- closed until ms (a RateLimited); k: its entry is still in the ring though it
-- left (a pause or a RateLimited take it out in O(1), not with an O(ring) LREM):
-- the pick drops the entry when it comes to it, and a group that comes back first
-- takes it up again, so no group is in the ring twice. A record with nothing in it
-- (no jobs, limits, pause, binding slot) is deleted at once (with its entry, if
-- left behind); ready keys go when q reaches 0.
--!include ready

-- group_keys(J): the group keys in J (once per call)
local function group_keys(J)
  if not J.grp then
    local base = string.sub(J.tasks, 1, -7)
    J.grp, J.ring, J.gtimed, J.gbase = base .. ':grp', base .. ':grp:ring',
      base .. ':grp:timed', base .. ':grp:'
    J.gconfig, J.graves = base .. ':config', base .. ':grp:graves'
    J.groups, J.gclass = {}, {}
  end
end

-- group_class(g, rec) -> 0: no queued job (or '', no group); 1: waiting (queued
--   jobs); 2: waiting and held back by its limits (w 'f' at its max_active, or
--   't' closed by time)
local function group_class(g, rec)
  if g == '' or rec.q <= 0 then
    return 0
  end
  return (rec.w == 'f' or rec.w == 't') and 2 or 1
end

-- tally_groups(J, g, class): g's class (group_class) is `class` now: the queue's
--   'groups_waiting' and 'groups_limited' follow the change from the class it had
--   when loaded (J.gclass), one HINCRBY each that changed
local function tally_groups(J, g, class)
  local was = J.gclass[g] or 0
  if was == class then
    return
  end
  J.gclass[g] = class
  local waiting = (class > 0 and 1 or 0) - (was > 0 and 1 or 0)
  local limited = (class == 2 and 1 or 0) - (was == 2 and 1 or 0)
  if waiting ~= 0 then
    redis.call('HINCRBY', J.gconfig, 'groups_waiting', waiting)
  end
  if limited ~= 0 then
    redis.call('HINCRBY', J.gconfig, 'groups_limited', limited)
  end
end

-- loaded_group(J, g, raw) -> g's record decoded from `raw`, its class noted
local function loaded_group(J, g, raw)
  local rec = cjson.decode(raw)
  J.groups[g] = rec
  if J.gclass[g] == nil then
    J.gclass[g] = group_class(g, rec)
  end
  return rec
end

-- grouped(J) -> whether the queue has groups now ('groups' in its config, their
--   epoch: J.gepoch); lib/limit's read_limits sets both from its HMGET instead
local function grouped(J)
  if J.grouped == nil then
    group_keys(J)
    J.gepoch = redis.call('HGET', J.gconfig, 'groups') or nil
    J.grouped = J.gepoch ~= nil
  end
  return J.grouped
end

-- epoch_ready_keys(J, epoch, g) -> the ready list and priority zset of group g
--   (not '') in the groups of that epoch (a live one, or a grave's)
local function epoch_ready_keys(J, epoch, g)
  local at = J.gbase .. epoch .. ':'
  return at .. 'r:' .. g, at .. 'p:' .. g
end

-- group_ready_keys(J, g) -> the ready list and priority zset of group g ('': the
--   queue's), in the groups' epoch; nil when the queue has no groups
local function group_ready_keys(J, g)
  if g == '' then
    return J.tasks, J.prio
  end
  if not grouped(J) then
    return nil
  end
  return epoch_ready_keys(J, J.gepoch, g)
end

-- start_groups(J): the queue's first group: a new epoch (the server's µs, past any
--   still in `graves`: a clock set back) in 'groups'; its ready ungrouped jobs join
--   the ring as ''
local function start_groups(J)
  local t = redis.call('TIME')
  local epoch = tonumber(t[1]) * 1000000 + tonumber(t[2])
  while redis.call('HEXISTS', J.graves, string.format('%d', epoch)) == 1 do
    epoch = epoch + 1
  end
  J.gepoch, J.grouped = string.format('%d', epoch), true
  redis.call('HSET', J.gconfig, 'groups', J.gepoch)
  if redis.call('LLEN', J.tasks) > 0 or redis.call('ZCARD', J.prio) > 0 then
    redis.call('HSET', J.grp, '', '{"w":"r","q":0,"d":0,"a":0}')
    redis.call('LPUSH', J.ring, '')
    J.groups[''] = {w = 'r', q = 0, d = 0, a = 0}
  end
end

-- load_group(J, g) -> g's record (a new one when it has none); the first record of
--   a queue starts its groups (start_groups)
local function load_group(J, g)
  group_keys(J)
  local rec = J.groups[g]
  if rec then
    return rec
  end
  local raw = redis.call('HGET', J.grp, g)
  if raw then
    rec = loaded_group(J, g, raw)
  else
    rec = {q = 0, d = 0, a = 0}
    if g ~= '' and not grouped(J) then
      start_groups(J)
    end
  end
  J.groups[g] = rec
  return rec
end

-- save_group(J, g, rec, now): write g's record, or delete it when nothing is left
--   (a rate's slot still binding keeps it, timed, until the slot is due)
local function save_group(J, g, rec, now)
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  if rec.q + rec.d + rec.a == 0 and not rec.p and not rec.m and not rec.n
    and rec.w ~= 'r' then
    local binding = rec.tat and math.ceil(rec.tat / 1000) > now
    if binding then
      rec.w, rec.o = 't', math.ceil(rec.tat / 1000)
      redis.call('ZADD', J.gtimed, rec.o, g)
    else
      if rec.w == 't' then
        redis.call('ZREM', J.gtimed, g)
      end
      if rec.k then
        redis.call('LREM', J.ring, 1, g)  -- rare: a group shut, then emptied
      end
      redis.call('HDEL', J.grp, g)
      J.groups[g] = nil
      tally_groups(J, g, 0)
      if redis.call('EXISTS', J.grp) == 0 then
        redis.call('HDEL', J.gconfig, 'groups', 'groups_waiting', 'groups_limited')
        J.grouped, J.gepoch = false, nil  -- each ready key went when its q reached 0
      end
      return
    end
  end
  tally_groups(J, g, group_class(g, rec))
  redis.call('HSET', J.grp, g, cjson.encode(rec))
end

-- place_group(J, g, rec): into the ring (the back) when it has ready jobs and
--   nothing holds it (the take's pick checks its limits), out when it has none
--   (LREM, O(ring); a caller that empties many groups in one call sets
--   J.ring_out, a list, and they are removed together: lib/sweep's leave_ring_all)
local function place_group(J, g, rec)
  if rec.p or rec.w == 't' or rec.w == 'f' then
    return
  end
  if rec.q > 0 and rec.w ~= 'r' then
    rec.w = 'r'
    if rec.k then
      rec.k = nil  -- its entry left behind is its place again
    else
      redis.call('LPUSH', J.ring, g)
    end
  elseif rec.q == 0 and rec.w == 'r' then
    rec.w = nil
    if J.ring_out then
      J.ring_out[#J.ring_out + 1] = g
    else
      redis.call('LREM', J.ring, 1, g)
    end
  end
end

local BUCKET = {q = 'q', d = 'd', r = 'd', a = 'a'}

-- group_move(J, record, from, to, now): a grouped job changed state (from nil: a
--   new job): its group's counts and place. An active job that ended frees its
--   group's max_active (J.group_freed); a queued one that left (a cancel) may
--   leave only tombstones, deleted with the ready keys when none is queued.
local function group_move(J, record, from, to, now)
  local g = record.G
  if not g then
    return
  end
  local rec = load_group(J, g)
  local out, into = from and BUCKET[from], BUCKET[to]
  if out then
    rec[out] = rec[out] - 1
  end
  if into then
    rec[into] = rec[into] + 1
  end
  if out == 'a' and rec.w == 'f' then
    rec.w = nil
    J.group_freed = true
  end
  place_group(J, g, rec)
  if out == 'q' and rec.q == 0 then
    redis.call('DEL', group_ready_keys(J, g))
  end
  save_group(J, g, rec, now)
end

-- make_ready(J, record, entry, front): push_ready into the job's group's ready
--   keys (lib/ready); an ungrouped job of a queue with groups puts '' in the ring.
--   The caller moves its counts (group_move).
local function make_ready(J, record, entry, front)
  if record.G then
    group_keys(J)
    if not grouped(J) then
      start_groups(J)
    end
    local tasks, prio = group_ready_keys(J, record.G)
    push_ready(tasks, prio, J.seq, record, entry, front)
    return
  end
  push_ready(J.tasks, J.prio, J.seq, record, entry, front)
  if grouped(J) and not J.groups[''] then
    local raw = redis.call('HGET', J.grp, '')
    if not raw then
      redis.call('HSET', J.grp, '', '{"w":"r","q":0,"d":0,"a":0}')
      redis.call('LPUSH', J.ring, '')
    end
    J.groups[''] = {w = 'r', q = 0, d = 0, a = 0}
  end
end

-- unready_group(J, record, entry): a cancelled queued job out of its priority zset
--   (a priority-0 entry stays as a tombstone, as lib/cancel's)
local function unready_group(J, record, entry)
  if (record.P or 0) ~= 0 then
    group_keys(J)
    local _, prio = group_ready_keys(J, record.G or '')
    redis.call('ZREM', prio, entry)
  end
end

-- leave_ring_lazily(rec): the group is out of the ring, its entry left behind
--   (k) for the pick to drop (a pause, a RateLimited: O(1))
local function leave_ring_lazily(rec)
  if rec.w == 'r' then
    rec.w, rec.k = nil, 1
  end
end

-- group_shut(J, record, due): a grouped job raised RateLimited: its group closed
--   until `due` (ms), out of the ring, timed
local function group_shut(J, record, due)
  local rec = load_group(J, record.G)
  if not rec.sh or rec.sh < due then
    rec.sh = due
  end
  leave_ring_lazily(rec)
  rec.w, rec.o = 't', rec.sh
  redis.call('ZADD', J.gtimed, rec.o, record.G)
end

-- reopen_groups(J, now, chunk) -> how many due timed groups went back to the ring
local function reopen_groups(J, now, chunk)
  group_keys(J)
  local due = redis.call('ZRANGEBYSCORE', J.gtimed, '-inf', now, 'LIMIT', 0, chunk)
  local back = 0
  if #due > 0 then
    redis.call('ZREM', J.gtimed, unpack(due))
  end
  for _, g in ipairs(due) do
    local raw = redis.call('HGET', J.grp, g)
    if raw then
      local rec = loaded_group(J, g, raw)
      rec.w, rec.o = nil, nil
      if rec.sh and rec.sh <= now then
        rec.sh = nil
      end
      if rec.tat and math.ceil(rec.tat / 1000) <= now then
        rec.tat = nil
      end
      place_group(J, g, rec)
      if rec.w == 'r' then
        back = back + 1
      end
      save_group(J, g, rec, now)
    end
  end
  return back
end

-- next_reopen(J) -> the ms the first timed group reopens, or nil
local function next_reopen(J)
  group_keys(J)
  local head = redis.call('ZRANGE', J.gtimed, 0, 0, 'WITHSCORES')
  return head[2] and tonumber(head[2]) or nil
end
