-- history_read: the blocks of a queue's metrics history a read spans, in one
--   round trip (worqr._core.history picks them from Redis's clock). Read only.
-- KEYS[1..n] history      hash    the blocks, oldest first
-- Reply: {fields of block 1 (HGETALL), fields of block 2, ...}
-- Errors: none.
-- Events: none.
local first_block = 1  -- KEYS[1..n] history

local blocks = {}
for i = first_block, #KEYS do
  blocks[#blocks + 1] = redis.call('HGETALL', KEYS[i])
end
return blocks
