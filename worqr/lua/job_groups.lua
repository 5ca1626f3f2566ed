-- job_groups: a page of a job queue's groups (lib/group): those with waiting or
--   active jobs, limits of their own or a pause (the member '' of ungrouped jobs
--   is left out), read with one HSCAN.
-- KEYS[1] tasks       list   the queue's ready entries
-- KEYS[2] config      hash   per-queue options: the groups' defaults
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] cursor      HSCAN cursor ('0' to start)
-- ARGV[2] count       about how many groups to read (HSCAN's COUNT)
-- Reply: {cursor, groups, defaults, now}: cursor '0' when done; groups flat, two
--   per group: name, record JSON; defaults {group_rate, group_per,
--   group_max_active} (false: none); now the server's ms.
-- Errors: none.
-- Events: none.
--!include clock
--!include group
local tasks = KEYS[1]
local config = KEYS[2]
local cursor = ARGV[1]
local count = ARGV[2]

local J = {tasks = tasks}
group_keys(J)
local page = redis.call('HSCAN', J.grp, cursor, 'COUNT', count)
local groups = {}
for i = 1, #page[2], 2 do
  if page[2][i] ~= '' then
    groups[#groups + 1] = page[2][i]
    groups[#groups + 1] = page[2][i + 1]
  end
end
local defaults = redis.call('HMGET', config, 'group_rate', 'group_per', 'group_max_active')
return {page[1], groups, defaults, now_ms()}
