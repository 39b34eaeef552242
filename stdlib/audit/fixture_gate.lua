-- fixture_gate: a gate for audit's tests, which find it by id in their own
-- directory (stdlib plugins are stdlib/<id>.lua or stdlib/<id>/init.lua, so
-- no agent can enable it). Config: decisions = {tool = {decision, reason}}
-- with decision "block", "suspend", "set_result" (an error result) or
-- "rewrite" (adds rewritten = true to the arguments). A resumed call is
-- allowed.
local awaken = require("awaken")

local p = awaken.plugin {
  id = "fixture_gate",
  description = "Test fixture: fixed gate decisions per tool",
  config = {
    decisions = {
      type = "object",
      default = {},
      additionalProperties = {
        type = "object",
        required = { "decision" },
        properties = {
          decision = { type = "string", enum = { "block", "suspend", "set_result", "rewrite" } },
          reason = { type = "string" },
        },
      },
    },
  },
}

p:tool_gate(function(ctx, call)
  local d = ctx.config.decisions[call.name]
  if d == nil or call.resume then return end
  local reason = d.reason or d.decision
  if d.decision == "block" then return awaken.block(reason) end
  if d.decision == "suspend" then return awaken.suspend { message = reason } end
  if d.decision == "set_result" then return awaken.set_result(awaken.error(reason)) end
  if not call.args.rewritten then
    local args = { rewritten = true }
    for k, v in pairs(call.args) do args[k] = v end
    return awaken.rewrite(args)
  end
end)

return p
