-- error() in a hook.
local awaken = require("awaken")
local p = awaken.plugin { id = "raise" }
p:on("step_start", function(ctx)
  error("something broke")
end)
return p
