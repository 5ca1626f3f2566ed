-- lib/fires: a cron schedule's buffer of fire times (lib/schedule's spec.f),
-- computed by clients and merged in here (job_sched_set, job_sched_refill).

-- merge_fires(spec, fires) -> how many new fire times the buffer gained
--   The union of the buffer and `fires` (all of one spec: the same cron and
--   tz give the same times), past the last consumed fire, ascending.
local function merge_fires(spec, fires)
  local seen, merged, added = {}, {}, 0
  for _, at in ipairs(spec.f or {}) do
    seen[at] = true
    merged[#merged + 1] = at
  end
  for _, at in ipairs(fires) do
    if not seen[at] and at > (spec.L or -1) then
      seen[at] = true
      merged[#merged + 1] = at
      added = added + 1
    end
  end
  table.sort(merged)
  spec.f = merged
  if #merged > 0 and merged[#merged] > (spec.b or -1) then
    spec.b = merged[#merged]
  end
  spec.n = merged[1]
  return added
end

-- read_fires(args, first) -> args[first..], fire times (ms, ascending), as numbers
local function read_fires(args, first)
  local fires = {}
  for i = first, #args do
    fires[#fires + 1] = tonumber(args[i])
  end
  return fires
end
