-- job_child_done: children of flow parents of this queue report how they ended.
--   Each report is stored once (with the child's result or error copied in, so the
--   parent never depends on the child's retention); a report to a parent that is
--   no longer waiting in that life, or already stored, changes nothing. The last
--   report queues the parent; under policy 'fail' a child that did not finish
--   fails the parent at once, and the parent's end cancels its other children.
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16] members       set     workers of this queue
-- KEYS[17] idle          set     members waiting for work
-- KEYS[18] stats         hash    lifetime counters of the queue, by event
-- KEYS[19..24] flow_keys the queue's flow keys (lib/flow)
-- Keys named by data: the queue's group keys (lib/group), all in its slot ({P:Q}).
-- ARGV[1] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[3] notify            the queue's channel for waiters
-- ARGV[4] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[5..n] reports        six per report: parent id, parent life, child index
--                           (from 0), outcome (f, x, c), result type (s, b, n, or
--                           '' when it did not finish), result or error text
-- Reply: {stored, ops}: how many reports were stored now; ops three per outbox
--   operation written (lib/flow): a failed parent's report and cancels.
-- Errors: none.
-- Events: 'work:<n>' to at most one idle worker per parent queued now; 'done:<id>'
--   on notify for a parent failed here that someone waits for.
--!include publish
--!include wake
--!include clock
--!include job_keys
--!include flow
--!include jobs
--!include counters
--!include group
--!include terminal
local J = job_keys()
local members = KEYS[16]
local idle = KEYS[17]
local stats = KEYS[18]
flow_keys(J, 19)
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local notify = ARGV[3]
local policy = cjson.decode(ARGV[4])
local first_report = 5  -- ARGV[5..n] reports
J.members, J.idle, J.stats, J.notify = members, idle, stats, notify

local now = now_ms()
local stored, ready = 0, 0
for i = first_report, #ARGV, 6 do
  local id, life, index = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local outcome, kind, value = ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local record = load_job(J.jobs, id)
  local field = child_field(entry_of(id, life), index)
  if record and record.l == life and record.s == 'w'
    and redis.call('HEXISTS', J.flow, field) == 0 then
    local header = {s = outcome}
    if kind ~= '' then
      header.y = kind
    end
    redis.call('HSET', J.flow, field, cjson.encode(header) .. '\n' .. value)
    stored = stored + 1
    if outcome ~= 'f' and record.cf == 'fail' then
      redis.call('ZREM', J.waiting, id)
      local text = 'ChildFailed: child ' .. (record.cq[index + 1] or '?') .. '/' .. id .. '.'
        .. index .. ' ' .. state_name(outcome) .. (value ~= '' and (': ' .. value) or '')
      record.E = string.sub(text, 1, 1024)
      end_job(J, id, record, 'x', now, policy, publish)
    else
      record.ch = record.ch - 1
      if record.ch <= 0 then
        redis.call('ZREM', J.waiting, id)
        move(J, 'w', 'q')
        record.s = 'q'
        record.v = now
        make_ready(J, record, entry_of(id, life), false)
        ready = ready + 1
      end
    end
    save_job(J.jobs, id, record)
  end
end
stat(J, 'children_reported', stored)
wake_idle(idle, wake_prefix, publish, ready)
return {stored, J.ops}
