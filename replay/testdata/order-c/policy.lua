-- Places three context messages by priority (replay_test.go): order-b
-- swaps the two system ones, which the agent then sees the other way
-- round; order-c moves the suffix one, alone in its place, which it does not.
local awaken = require("awaken")
local p = awaken.plugin { description = "context messages in order" }

-- The runs replay_test.go records end by reading secret.txt, blocked.
p:tool_gate(function(ctx, call)
  if call.args.path == "secret.txt" then return awaken.block("secret.txt is off limits") end
end)

p:on("step_start", function(ctx)
  ctx:schedule("runtime.add_context_message", { key = "policy.a", content = "first", priority = 1 })
  ctx:schedule("runtime.add_context_message", { key = "policy.b", content = "second", priority = 2 })
  ctx:schedule("runtime.add_context_message", { key = "policy.c", content = "last", target = "suffix_system", priority = 5 })
end)

return p
