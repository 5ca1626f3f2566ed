-- history_add: add a worker's tallies to the queue's metrics history. Each update
--   adds one tally (the text worqr._core.history_model.encode makes:
--   "started,finished,retried,failed,cancelled;bucket:runs,...") to one field of
--   one block, and sets the block's expiry (a block outlives its last point by
--   the retention of its resolution). Not idempotent: a resend counts twice.
-- KEYS[1..n] history      hash    the blocks the updates name, by index
-- ARGV[1..n] updates      per update: block (index in KEYS), field, tally, expire_at (epoch s)
-- Reply: the server's time in ms (the worker's estimate of Redis's clock).
-- Errors: none.
-- Events: none.
--!include clock
local first_update = 1  -- ARGV[1..n] updates, four fields each

local function add_tally(text, counts, buckets)
  if not text then
    return
  end
  local head, tail = string.match(text, '^([^;]*);?(.*)$')
  local i = 1
  for n in string.gmatch(head, '%d+') do
    counts[i] = (counts[i] or 0) + tonumber(n)
    i = i + 1
  end
  for b, n in string.gmatch(tail, '(%d+):(%d+)') do
    b = tonumber(b)
    buckets[b] = (buckets[b] or 0) + tonumber(n)
  end
end

local function join_tally(counts, buckets)
  local head = {}
  for i = 1, 5 do
    head[i] = string.format('%d', counts[i] or 0)
  end
  local order = {}
  for b in pairs(buckets) do
    order[#order + 1] = b
  end
  table.sort(order)
  local tail = {}
  for i, b in ipairs(order) do
    tail[i] = string.format('%d:%d', b, buckets[b])
  end
  return table.concat(head, ',') .. ';' .. table.concat(tail, ',')
end

for i = first_update, #ARGV, 4 do
  local key = KEYS[tonumber(ARGV[i])]
  local field = ARGV[i + 1]
  local counts, buckets = {}, {}
  add_tally(redis.call('HGET', key, field), counts, buckets)
  add_tally(ARGV[i + 2], counts, buckets)
  redis.call('HSET', key, field, join_tally(counts, buckets))
  redis.call('EXPIREAT', key, ARGV[i + 3])
end
return now_ms()
