-- A require outside the plugin directory.
local awaken = require("awaken")
local p = awaken.plugin { id = "escape" }
p:on("step_start", function(ctx)
  require("..secrets")
end)
return p
