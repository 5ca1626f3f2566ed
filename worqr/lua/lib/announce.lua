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

-- announce_followed(J, now, wake_prefix, publish, grace): the keep_last follow-ups
--   this call's ended jobs placed (J.followed, lib/terminal) are announced
local function announce_followed(J, now, wake_prefix, publish, grace)
  local followed = J.followed
  if followed then
    announce(J, followed[1], followed[2], now, wake_prefix, publish, grace)
    J.followed = nil
  end
end
