-- A candidate that blocks a long password (replay_test.go): the masked
-- value and a string put in its place are both long, so only another
-- kind of value in its place shows that the decision reads it.
local awaken = require("awaken")
local p = awaken.plugin { description = "reads the password's length" }

p:tool_gate(function(ctx, call)
  local pw = call.args.password
  if type(pw) == "string" and #pw > 5 then return awaken.block("password too long") end
end)

return p
