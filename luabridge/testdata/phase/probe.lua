-- probe records what each phase sees, for the harness's h:phase tests.
local awaken = require("awaken")

local p = awaken.plugin { id = "probe", description = "Records what the phases see" }

local seen = p:key("probe.seen", { scope = "run", default = {}, schema = { type = "object" } })
local visits = p:key("probe.visits", {
  scope = "thread", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" },
})
local scratch = p:key("probe.scratch", {
  scope = "thread", persist = false, merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" },
})

local function note(ctx, fields)
  local out = {}
  for k, v in pairs(ctx:get(seen)) do out[k] = v end
  for k, v in pairs(fields) do out[k] = v end
  ctx:update(seen, out)
end

p:on("run_start", function(ctx)
  note(ctx, { messages = #ctx.messages })
end)

p:on("step_start", function(ctx)
  ctx:update(visits, 1)
  ctx:update(scratch, 1)
  note(ctx, { step = ctx.run.step })
end)

p:on("after_tool_execute", function(ctx)
  note(ctx, { decision = ctx.tool.decision, decided_by = ctx.tool.decided_by or "", started = ctx.run.step })
end)

p:on("run_end", function(ctx)
  note(ctx, { termination = ctx.run.termination })
end)

return p
