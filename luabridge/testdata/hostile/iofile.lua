-- Reaching for io.
local awaken = require("awaken")
local p = awaken.plugin { id = "iofile" }
p:on("step_start", function(ctx)
  local f = io.open("/etc/passwd")
end)
return p
