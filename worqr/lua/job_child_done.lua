-- job_child_done: children of flow parents of this queue report how they ended.
--   Each report is stored once (with the child's result or error copied in, so the
--   parent never depends on the child's retention); a report to a parent that is
--   no longer waiting in that life, or already stored, changes nothing. The last
--   report queues the parent; under policy 'fail' a child that did not finish
--   fails the parent at once, and the parent's end cancels its other children.
-- KEYS[1] tasks          list    ready entries at priority 0 (push left, pop right)
-- KEYS[2] job_prio       zset    ready entries with a priority
-- KEYS[3] job_seq        string  lives and priority order
-- KEYS[4] jobs           hash    id -> record
-- KEYS[5] job_data       hash    id -> payload
-- KEYS[6] job_result     hash    id -> result
-- KEYS[7] job_progress   hash    id -> last progress value
-- KEYS[8] job_delayed    zset    delayed entries by due ms
-- KEYS[9] job_retrying   zset    retrying entries by due ms
-- KEYS[10] job_finished  zset    finished ids by purge ms
-- KEYS[11] job_failed    zset    failed ids by purge ms
-- KEYS[12] job_cancelled zset    cancelled ids by purge ms
-- KEYS[13] job_unique    hash    unique marker -> id#life
-- KEYS[14] job_counts    hash    state -> count
-- KEYS[15] job_timer     hash    the member told when due work comes next
-- KEYS[16] members       set     workers of this queue
-- KEYS[17] idle          set     members waiting for work
-- KEYS[18] stats         hash    lifetime counters of the queue, by event
-- KEYS[19] job_outbox    zset    operations for other queues -> when a relay may take them
-- KEYS[20] job_outbox_data hash  operation id -> header JSON
-- KEYS[21] job_outbox_body hash  operation id -> body (a result passed on)
-- KEYS[22] job_flow      hash    parent#life|i -> child i's outcome
-- KEYS[23] job_waiting   zset    flow parents waiting for their children -> created ms
-- KEYS[24] job_flow_live zset    live flow jobs of this queue -> created ms (lib/flow)
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
--!include jobs
--!include ready
--!include flow
--!include terminal
--!include job_keys
local members = KEYS[16]
local idle = KEYS[17]
local stats = KEYS[18]
local job_outbox = KEYS[19]
local job_outbox_data = KEYS[20]
local job_outbox_body = KEYS[21]
local job_flow = KEYS[22]
local job_waiting = KEYS[23]
local job_flow_live = KEYS[24]
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local notify = ARGV[3]
local policy = cjson.decode(ARGV[4])
local first_report = 5  -- ARGV[5..n] reports
J.members, J.idle, J.stats, J.notify = members, idle, stats, notify
J.outbox, J.outbox_data, J.outbox_body = job_outbox, job_outbox_data, job_outbox_body
J.flow, J.waiting, J.flow_live = job_flow, job_waiting, job_flow_live

local OUTCOMES = {f = 'finished', x = 'failed', c = 'cancelled'}
local now = now_ms()
local stored, ready = 0, 0
for i = first_report, #ARGV, 6 do
  local id, life, index = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local outcome, kind, value = ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local record = load_job(jobs, id)
  local field = child_field(entry_of(id, life), index)
  if record and record.l == life and record.s == 'w'
    and redis.call('HEXISTS', job_flow, field) == 0 then
    local header = {s = outcome}
    if kind ~= '' then
      header.y = kind
    end
    redis.call('HSET', job_flow, field, cjson.encode(header) .. '\n' .. value)
    stored = stored + 1
    if outcome ~= 'f' and record.cf == 'fail' then
      redis.call('ZREM', job_waiting, id)
      local text = 'ChildFailed: child ' .. (record.cq[index + 1] or '?') .. '/' .. id .. '.'
        .. index .. ' ' .. OUTCOMES[outcome] .. (value ~= '' and (': ' .. value) or '')
      record.E = string.sub(text, 1, 1024)
      end_job(J, id, record, 'x', now, policy, publish)
    else
      record.ch = record.ch - 1
      if record.ch <= 0 then
        redis.call('ZREM', job_waiting, id)
        move(job_counts, 'w', 'q')
        record.s = 'q'
        record.v = now
        push_ready(tasks, job_prio, job_seq, record, entry_of(id, life), false)
        ready = ready + 1
      end
    end
    save_job(jobs, id, record)
  end
end
stat(stats, 'children_reported', stored)
if ready > 0 then
  wake_idle(idle, wake_prefix, publish, ready)
end
return {stored, FLOW_OPS}
