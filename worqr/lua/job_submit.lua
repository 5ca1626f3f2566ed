-- job_submit: create jobs (up to a few hundred per call), each by its id.
-- For each job: a resend of the same call (same nonce) answers as the first call
-- did; a live job with this id (or, with a unique marker, with this payload)
-- makes this one a duplicate and nothing is written; a terminal one starts a new
-- life. The job is queued (due now) or delayed (due later, by Redis's clock).
-- A job with a dedup key (options D) follows its mode instead (lib/dedup).
-- KEYS[1..15] job_keys   the queue's job keys (lib/job_keys)
-- KEYS[16..20] create_keys the queue's keys for creating jobs (lib/create)
-- KEYS[21..22] dedup_keys the queue's keys for dedup keys (lib/dedup)
-- Keys named by data: the queue's group keys (lib/group) and job logs (lib/job_log),
--   all in its slot ({P:Q}).
-- ARGV[1] wake_prefix       per-worker wake channel = wake_prefix .. worker id
-- ARGV[2] publish           'PUBLISH' or 'SPUBLISH' (lib/publish)
-- ARGV[3] policy            JSON: retention and budgets in ms (JobSettings.policy)
-- ARGV[4..n] jobs           four per job: id, nonce, payload, options JSON
--                           (d delay ms | A at ms, P priority, u unique marker,
--                           R retries, B backoff, T timeout ms, k result ttl ms,
--                           G group, D dedup key, M its mode, L its ttl ms,
--                           tp ts the trace context: W3C traceparent, tracestate)
-- Reply: per job {id, created, state}: created 1 when this call created it (or a
--   resend of the call that did), 0 for a duplicate (id: the live job's, which
--   differs from the one asked for when a unique marker or dedup key matched);
--   state its code ('' for a throttled key's job already purged).
-- Errors: WORQR_TASK_QUEUE when the queue holds tasks (it is a task queue).
-- Events: 'work:<n>' to at most one idle worker per job queued now; 'due:<ms>' to
--   the member told when the next delayed job is due.
--!include publish
--!include clock
--!include job_keys
--!include kind
--!include counters
--!include create
--!include dedup
--!include announce
local J = job_keys()
create_keys(J, 16)
dedup_keys(J, 21)
local wake_prefix = ARGV[1]
local publish = publish_command(ARGV[2])
local policy = cjson.decode(ARGV[3])
local first_job = 4  -- ARGV[4..n] jobs

local refused = claim_kind(J.config, 'jobs', J.tasks, J.processes)
if refused then
  return refused
end
local now = now_ms()
local reply = {}
local ready = 0
local delayed = 0
local submitted = 0
local duplicates = 0

for i = first_job, #ARGV, 4 do
  local id, nonce, payload, options = ARGV[i], ARGV[i + 1], ARGV[i + 2], cjson.decode(ARGV[i + 3])
  local answer, new, placed
  if options.D then
    answer, new, placed = submit_deduped(J, id, nonce, payload, options, now)
  else
    answer, new = create_job(J, id, nonce, payload, options, now)
    placed = new and answer[3]
  end
  if answer[2] == 0 then
    duplicates = duplicates + 1
  elseif new then
    submitted = submitted + 1
  end
  if placed == 'd' then
    delayed = delayed + 1
  elseif placed == 'q' then
    ready = ready + 1
  end
  reply[#reply + 1] = answer
end

stat(J, 'submitted', submitted)
stat(J, 'deduplicated', duplicates)
announce(J, ready, delayed, now, wake_prefix, publish, policy.timer_grace)
return reply
