-- lib/announce: jobs made ready or delayed now are announced (job_submit,
-- job_flow_submit). J as in lib/timer.
--!include wake
--!include timer

-- announce(J, ready, delayed, now, wake_prefix, publish, grace): jobs were made
--   ready or delayed now: one idle worker woken per ready job (lib/wake), and
--   the timer armed when some are delayed
local function announce(J, ready, delayed, now, wake_prefix, publish, grace)
  wake_idle(J.idle, wake_prefix, publish, ready)
  if delayed > 0 then
    arm_timer(J, now, nil, wake_prefix, publish, grace)
  end
end
