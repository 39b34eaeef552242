-- A global written at call time (a pooled state would carry it to the next call).
local awaken = require("awaken")
local p = awaken.plugin { id = "globalwrite" }
p:on("step_start", function(ctx)
  counter = (counter or 0) + 1
end)
return p
