-- reminder: when a tool call that matches a rule completes, schedule a
-- context message for the next step (runtime.add_context_message runs in
-- before_inference, so a message scheduled from after_tool_execute reaches
-- the model's next request).
local awaken = require("awaken")
local match = require("reminder.match")

local prepare -- below: the rules of a config, as ctx.prepared

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
  prepare = function(config) return prepare(config) end,
}

-- The context message key of rule i (1-based here, 0-based in the key, like
-- config paths); padded so that keys sort in rule order.
local function key_of(i)
  return string.format("reminder.rule_%03d", i - 1)
end

-- The rules of a config, prepared once per config (ctx.prepared): each
-- rule's parsed tool pattern (false when invalid), its output conditions
-- and the payload of its message (ctx:schedule copies it); and names, when
-- every pattern is an exact name without argument conditions, the set of
-- those names: a call to any other tool matches no rule.
function prepare(config)
  local rules = config.rules or {}
  local list, names = {}, {}
  for i = 1, #rules do
    local rule = rules[i]
    local pattern = match.tool_rule(rule.tool)
    if names ~= nil then
      if pattern and pattern.mode == "none" and pattern.kind == "exact" and not match.server(pattern) then
        names[pattern.name] = true
      else
        names = nil
      end
    end
    local m = rule.message
    local throttled = m.cooldown > 0
    list[i] = {
      pattern = pattern or false,
      output = rule.output,
      payload = {
        key = key_of(i),
        content = m.content,
        target = m.target,
        priority = m.priority,
        kind = throttled and "throttled" or "ephemeral",
        cooldown = throttled and m.cooldown or nil,
      },
    }
  end
  return { list = list, names = names }
end

p:on("after_tool_execute", function(ctx)
  local prep = ctx.prepared
  local list = prep.list
  if #list == 0 then return end
  local tool = ctx.tool
  local name = tool.name
  if prep.names ~= nil and not prep.names[name] then return end
  local result, view, st
  for i = 1, #list do
    local rule = list[i]
    local pattern = rule.pattern
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
        ctx:schedule("runtime.add_context_message", rule.payload)
      end
    end
  end
end)

return p
