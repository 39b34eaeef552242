local awaken = require("awaken")

local p = awaken.plugin {
  id = "guard",
  description = "Blocks dangerous commands",
  config = {
    deny = { type = "array", items = { type = "string" }, default = { "rm", "mkfs" } },
  },
}

local calls = p:key("guard.calls", {
  scope = "run", merge = "commutative", schema = { type = "integer" },
  default = 0, reducer = "add",
})

p:tool_gate(function(ctx, call)
  for _, word in ipairs(ctx.config.deny) do
    if call.name == "shell" and tostring(call.args.cmd):find(word, 1, true) then
      return awaken.block("'" .. word .. "' is not allowed")
    end
  end
end)

p:on("after_tool_execute", function(ctx)
  ctx:update(calls, 1)
  if ctx:get(calls) + 1 >= 2 then
    ctx:schedule("runtime.add_context_message",
      { key = "guard.slow", content = "Slow down.", target = "system", kind = "throttled", cooldown = 3 })
  end
  ctx:emit("runtime.audit", { tool = ctx.tool.name, status = ctx.tool.result.status })
end)

return p
