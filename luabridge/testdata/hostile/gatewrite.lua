-- A write from a gate hook (gates are pure).
local awaken = require("awaken")
local p = awaken.plugin { id = "gatewrite" }
local k = p:key("gatewrite.n", { reducer = "add" })
p:tool_gate(function(ctx, call)
  ctx:update(k, 1)
end)
return p
