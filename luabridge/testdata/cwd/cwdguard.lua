-- Denies a Read of ./.env in the agent's working directory (ctx.run.cwd),
-- and notes what each step and run start read.
local awaken = require("awaken")

local p = awaken.plugin {
  prepare = function()
    return { policy = assert(awaken.rules.compile { allow = { "Read" }, deny = { "Read(./.env)" } }) }
  end,
}

local seen = p:key("cwdguard.seen", { scope = "run", schema = { type = "string" }, default = "" })

local kept -- a ctx kept past its call (Stale), which awaken.rules refuses

-- Read calls name the directory in a table, others pass ctx itself.
p:tool_gate(function(ctx, call)
  local dirs = ctx
  if call.name == "Read" then
    local cwd = ctx.run.cwd
    dirs = cwd and { cwd = cwd } or nil
  elseif call.name == "Stale" then
    if not kept then
      kept = ctx
      return nil
    end
    dirs = kept
  end
  local behavior, _, reason = ctx.prepared.policy:decide(call, dirs)
  if behavior == "deny" then return awaken.block(reason) end
end)

local function note(ctx) ctx:update(seen, ctx.run.cwd or "none") end
p:on("run_start", note)
p:on("step_start", note)

return p
