-- A value of the wrong type for its key.
local awaken = require("awaken")
local p = awaken.plugin { id = "wrongtype" }
local n = p:key("wrongtype.n", { schema = { type = "integer" } })
p:on("step_start", function(ctx)
  ctx:update(n, "not a number")
end)
return p
