-- purge_failed: drop every dead letter of a queue.
-- Cost: O(length of the failed list), which Settings.failed_max bounds.
-- KEYS[1] failed      list  dead letters, newest on the left
-- Reply: integer, how many dead letters were dropped.
-- Errors: none.
-- Events: none.
local failed = KEYS[1]

local dropped = redis.call('LLEN', failed)
redis.call('UNLINK', failed)  -- a long list is freed off the main thread
return dropped
