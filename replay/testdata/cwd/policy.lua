-- A policy whose decisions depend on the agent's working directory
-- (replay_test.go): Claude Code's Read(./.env) anchored at ctx.run.cwd.
local awaken = require("awaken")
local p = awaken.plugin {
  description = "denies the working directory's .env",
  prepare = function()
    return { policy = assert(awaken.rules.compile { allow = { "Read" }, deny = { "Read(./.env)" } }) }
  end,
}

p:tool_gate(function(ctx, call)
  if call.name ~= "fs_read" then return nil end
  local cwd = ctx.run.cwd
  local behavior, _, reason = ctx.prepared.policy:decide("Read", { file_path = call.args.path }, cwd and { cwd = cwd } or nil)
  if behavior == "deny" then return awaken.block(reason) end
end)

return p
