-- lib/return: an active job goes back to the ready jobs (a stop, a released or
-- failed-over worker). J as in lib/job_keys.
--!include jobs
--!include counters
--!include group

-- return_job(J, id, record, entry): an active job goes back to where it was
-- taken from (the front of its priority), queued; no counter is charged here.
local function return_job(J, id, record, entry)
  move(J, 'a', 'q')
  record.s = 'q'
  make_ready(J, record, entry, true)
  group_move(J, record, 'a', 'q', nil)
  save_job(J.jobs, id, record)
end
