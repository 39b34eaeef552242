-- The candidate: blocks notes.txt too, words its hint differently, and
-- stops runs that ask it to.
local awaken = require("awaken")
local p = awaken.plugin { description = "the candidate policy" }

local function prompt(ctx)
  for i = #ctx.messages, 1, -1 do
    if ctx.messages[i].role == "user" then return ctx.messages[i].content end
  end
  return ""
end

p:tool_gate(function(ctx, call)
  if call.name == "fs_read" and (call.args.path == "secret.txt" or call.args.path == "notes.txt") then
    return awaken.block(call.args.path .. " is off limits")
  end
end)

p:on("step_start", function(ctx)
  if prompt(ctx):find("context") then
    ctx:schedule("runtime.add_context_message", { key = "policy.hint", content = "always cite files" })
  end
end)

p:on("after_inference", function(ctx)
  if prompt(ctx):find("stop") then
    ctx:stop("asked_to_stop", "the prompt asked for it")
  end
end)

return p
