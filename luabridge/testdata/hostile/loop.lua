-- An endless loop in a hook.
local awaken = require("awaken")
local p = awaken.plugin { id = "loop" }
p:on("step_start", function(ctx)
  while true do end
end)
return p
