-- Reaching for os and io.
local awaken = require("awaken")
local p = awaken.plugin { id = "osio" }
p:on("step_start", function(ctx)
  os.execute("touch /tmp/awaken-pwned")
end)
return p
