-- A candidate that is the recorded policy (v1) plus a run_end hook that
-- fails on runs that read files: replay compares run_end too.
local awaken = require("awaken")
local p = awaken.plugin { description = "the recorded policy with a run_end hook" }

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
    ctx:schedule("runtime.add_context_message",
      { key = "policy.hint", content = "cite files (at " .. ctx:now() .. ")" })
  end
end)

p:on("run_end", function(ctx)
  if prompt(ctx):find("the files") then
    error("cannot summarize the files read")
  end
end)

return p
