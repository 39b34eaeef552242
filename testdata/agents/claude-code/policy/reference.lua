-- The reference policy of testdata/agents/claude-code: each *.reply.json
-- there is what the sidecar answers with it (README.md beside this
-- directory). It denies Bash(rm *), asks for Bash(git push *), rewrites
-- nothing, and keeps the session's first Stop going once.
local awaken = require("awaken")

local p = awaken.plugin {
  id = "reference",
  description = "Denies Bash(rm *), asks for Bash(git push *), continues the session's first stop",
  config = {
    -- Bash(X *): a simple command whose first words are X.
    deny = { type = "array", items = { type = "string" }, default = { "rm" } },
    ask = { type = "array", items = { type = "string" }, default = { "git push" } },
    continue = {
      type = "string",
      default = "Before you finish, run the test suite (npm test) and report what it says.",
    },
  },
}

local continued = p:key("reference.continued", {
  scope = "thread", merge = "exclusive", schema = { type = "boolean" }, default = false,
})

-- starts reports whether a simple command's first words are the words of
-- prefix.
local function starts(argv, prefix)
  local i = 0
  for word in prefix:gmatch("%S+") do
    i = i + 1
    if argv[i] ~= word then return false end
  end
  return i > 0
end

p:tool_gate(function(ctx, call)
  if call.name ~= "Bash" then return nil end
  local cmds, err = awaken.shell.split(tostring(call.args.command or ""))
  if not cmds then
    return awaken.block("the command cannot be checked: " .. tostring(err))
  end
  for _, c in ipairs(cmds) do
    for _, prefix in ipairs(ctx.config.deny) do
      if starts(c.argv, prefix) then
        return awaken.block(string.format("Bash(%s *) denies this command: %s", prefix, c.text))
      end
    end
  end
  for _, c in ipairs(cmds) do
    for _, prefix in ipairs(ctx.config.ask) do
      if starts(c.argv, prefix) then
        return awaken.suspend {
          action = "permission",
          message = string.format("Bash(%s *) asks before this command: %s", prefix, c.text),
          parameters = { tool = call.name, args = call.args },
        }
      end
    end
  end
end)

-- The model answered without tool calls (Claude Code's Stop): the first
-- time in the session, the run goes on with one more instruction. A
-- subagent's stop (its own thread, "<session>/subagent/<agent_id>") is left
-- alone.
p:on("after_inference", function(ctx)
  if #ctx.response.tool_calls > 0 or ctx:get(continued) then return end
  if ctx.run.thread_id:find("/subagent/", 1, true) then return end
  ctx:update(continued, true)
  ctx:schedule("runtime.continue", { content = ctx.config.continue })
end)

return p
