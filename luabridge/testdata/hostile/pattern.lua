-- A pathological pattern: the deadline does not interrupt pattern matching.
local awaken = require("awaken")
local p = awaken.plugin { id = "pattern" }
p:on("step_start", function(ctx)
  local s = ("a"):rep(3000)
  s:find(".-.-.-.-b")
end)
return p
