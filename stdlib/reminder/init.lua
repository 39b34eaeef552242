-- reminder: when a tool call that matches a rule completes, schedule a
-- context message for the next step (runtime.add_context_message runs in
-- before_inference, so a message scheduled from after_tool_execute reaches
-- the model's next request).
local awaken = require("awaken")
local match = require("reminder.match")

local p = awaken.plugin {
  id = "reminder",
  description = "Adds a context message for the next step when a matching tool call completes",
  config = {
    rules = {
      type = "array",
      default = {},
      items = {
        type = "object",
        required = { "tool", "message" },
        additionalProperties = false,
        properties = {
          -- a tool pattern in the permission plugin's rule syntax: an exact
          -- name, a glob, a /regex/, or Name(argument conditions)
          tool = { type = "string", minLength = 1 },
          -- conditions on the call's result; all given ones must hold
          output = {
            type = "object",
            additionalProperties = false,
            properties = {
              status = { type = "string", enum = { "success", "error" } },
              -- a glob on the result text
              content = { type = "string" },
              -- conditions on fields of the result data
              fields = {
                type = "array",
                items = {
                  type = "object",
                  required = { "path", "value" },
                  additionalProperties = false,
                  properties = {
                    path = { type = "string", minLength = 1 },
                    op = { type = "string", enum = { "=", "!=", "~" }, default = "=" },
                    value = { type = { "string", "number", "integer", "boolean", "array", "object" } },
                  },
                },
              },
            },
          },
          message = {
            type = "object",
            required = { "content" },
            additionalProperties = false,
            properties = {
              content = { type = "string", minLength = 1 },
              target = { type = "string", enum = { "system", "session", "conversation", "suffix_system" }, default = "system" },
              -- in steps; 0 sends the message every time the rule matches
              cooldown = { type = "integer", minimum = 0, default = 0 },
              priority = { type = "number", default = 0 },
            },
          },
        },
      },
    },
  },
  validate = match.validate,
}

-- The context message key of rule i (1-based here, 0-based in the key, like
-- config paths); padded so that keys sort in rule order.
local function key_of(i)
  return string.format("reminder.rule_%03d", i - 1)
end

p:on("after_tool_execute", function(ctx)
  local rules = ctx.config.rules
  if rules == nil or #rules == 0 then return end
  local tool = ctx.tool
  local name = tool.name
  local result, view, st
  for i = 1, #rules do
    local rule = rules[i]
    local pattern = match.tool_rule(rule.tool)
    local hit = false
    if pattern then
      hit = match.simple(pattern, name)
      if hit == nil then
        -- a regex or argument conditions: one work budget for the call
        st = st or { budget = { left = match.DECISION_BUDGET }, cache = {} }
        hit = match.tool(pattern, name, tool, st)
      end
    end
    if hit then
      result = result or tool.result
      view = view or {} -- text and data of the result, computed once if needed
      if result ~= nil and match.output(rule.output, result, view) then
        local m = rule.message
        local throttled = m.cooldown > 0
        ctx:schedule("runtime.add_context_message", {
          key = key_of(i),
          content = m.content,
          target = m.target,
          priority = m.priority,
          kind = throttled and "throttled" or "ephemeral",
          cooldown = throttled and m.cooldown or nil,
        })
      end
    end
  end
end)

return p
