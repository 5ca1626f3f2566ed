-- lib/job_keys: the keys every job script takes first (QueueKeys.job_keys). A
-- block of keys (these, lib/flow's, lib/schedule's) is one header line, `-- KEYS[i..j]
-- <block> ... (lib/<piece>)`, bound by the piece's function: `local J = job_keys()`
-- makes J, the table job pieces take, each key named without 'job_' (J.prio);
-- the script adds what its pieces use (J.stats, J.idle, J.notify, ...).
--   +0  tasks          list    ready entries at priority 0; the right end is the front
--   +1  job_prio       zset    ready entries with a priority
--   +2  job_seq        string  lives and priority order
--   +3  jobs           hash    id -> record (lib/jobs)
--   +4  job_data       hash    id -> payload
--   +5  job_result     hash    id -> result
--   +6  job_progress   hash    id -> last progress value
--   +7  job_delayed    zset    delayed entries by due ms
--   +8  job_retrying   zset    retrying entries by due ms
--   +9  job_finished   zset    finished ids by purge ms
--   +10 job_failed     zset    failed ids by purge ms
--   +11 job_cancelled  zset    cancelled ids by purge ms
--   +12 job_unique     hash    unique marker -> id#life
--   +13 job_counts     hash    state -> count
--   +14 job_timer      hash    the member told when due work comes next

-- job_keys() -> J, the job keys by name
local function job_keys()
  return {
    tasks = KEYS[1], prio = KEYS[2], seq = KEYS[3], jobs = KEYS[4], data = KEYS[5],
    result = KEYS[6], progress = KEYS[7], delayed = KEYS[8], retrying = KEYS[9],
    finished = KEYS[10], failed = KEYS[11], cancelled = KEYS[12], unique = KEYS[13],
    counts = KEYS[14], timer = KEYS[15],
  }
end
