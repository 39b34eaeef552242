-- A candidate whose rule reads a field the journal masks (replay_test.go),
-- and which also blocks notes.txt outright.
local awaken = require("awaken")
local p = awaken.plugin { description = "reads the password" }

p:tool_gate(function(ctx, call)
  if call.name ~= "fs_read" then return nil end
  if call.args.path == "notes.txt" then return awaken.block("notes.txt is off limits") end
  local pw = call.args.password
  if type(pw) == "string" and #pw < 10 then return awaken.block("weak password") end
end)

return p
