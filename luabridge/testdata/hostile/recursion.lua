-- Endless recursion.
local awaken = require("awaken")
local p = awaken.plugin { id = "recursion" }
local function f(n) return f(n + 1) + 1 end
p:on("step_start", function(ctx)
  f(1)
end)
return p
