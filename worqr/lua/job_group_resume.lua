-- job_group_resume: let a paused group's jobs start again (back in the ring,
--   lib/group) and wake as many idle workers as it has queued jobs (no more than
--   are idle). A group that is not paused is left as it is.
-- KEYS[1] tasks       list   the queue's ready entries
-- KEYS[2] job_prio    zset   ready entries with a priority
-- KEYS[3] idle        set    members waiting for work
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] group       the group
-- ARGV[2] wake_prefix per-worker wake channel = wake_prefix .. worker id
-- ARGV[3] publish     'PUBLISH' or 'SPUBLISH' (lib/publish)
-- Reply: {resumed, woken}: resumed 1 when it was paused, else 0 (nothing done);
--   woken the idle workers told.
-- Errors: none.
-- Events: 'work:<n>' on the wake channel of each idle worker woken.
--!include publish
--!include wake
--!include clock
--!include group
local tasks = KEYS[1]
local job_prio = KEYS[2]
local idle = KEYS[3]
local group = ARGV[1]
local wake_prefix = ARGV[2]
local publish = publish_command(ARGV[3])

local J = {tasks = tasks, prio = job_prio}
group_keys(J)
if not redis.call('HGET', J.grp, group) then
  return {0, 0}
end
local rec = load_group(J, group)
if not rec.p then
  return {0, 0}
end
rec.p = nil
place_group(J, group, rec)
local wake = math.min(rec.q, redis.call('SCARD', idle))
save_group(J, group, rec, now_ms())
if wake > 0 then
  wake_idle(idle, wake_prefix, publish, wake)
end
return {1, wake}
