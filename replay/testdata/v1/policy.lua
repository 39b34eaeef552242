-- The policy a journal is recorded with (replay_test.go).
local awaken = require("awaken")
local p = awaken.plugin { description = "the recorded policy" }

local function prompt(ctx)
  for i = #ctx.messages, 1, -1 do
    if ctx.messages[i].role == "user" then return ctx.messages[i].content end
  end
  return ""
end

p:tool_gate(function(ctx, call)
  if call.name == "fs_read" and call.args.path == "secret.txt" then
    return awaken.block("secret.txt is off limits")
  end
end)

p:on("step_start", function(ctx)
  if prompt(ctx):find("context") then
    -- The clock is part of the recording: replay reads the same time.
    ctx:schedule("runtime.add_context_message",
      { key = "policy.hint", content = "cite files (at " .. ctx:now() .. ")" })
  end
end)

return p
