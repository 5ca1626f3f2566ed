-- lib/publish: the command a script publishes its notifications with.
-- publish_command(command) -> command
--   `command` is what the client chose: 'PUBLISH', or 'SPUBLISH' (sharded pub/sub,
--   Redis Cluster >= 7). A node older than 7.0 (a cluster mid-upgrade) knows neither
--   SPUBLISH nor redis.REDIS_VERSION_NUM: there it falls back to PUBLISH, so a script
--   never fails after it has written.
local function publish_command(command)
  if command == 'SPUBLISH' and not redis.REDIS_VERSION_NUM then
    return 'PUBLISH'
  end
  return command
end
