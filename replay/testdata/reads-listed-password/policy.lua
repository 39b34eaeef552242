-- A candidate whose rule reads a field the journal masks inside a list
-- (replay_test.go).
local awaken = require("awaken")
local p = awaken.plugin { description = "reads a listed password" }

p:tool_gate(function(ctx, call)
  local creds = call.args.creds
  if type(creds) ~= "table" or type(creds[1]) ~= "table" then return nil end
  local pw = creds[1].password
  if type(pw) == "string" and #pw < 10 then return awaken.block("weak password") end
end)

return p
