-- A plugin that uses every part of the awaken API. api_test.go drives it.
local awaken = require("awaken")
local util = require("lib.util")

local p = awaken.plugin {
  id = "everything",
  description = "exercises the whole API",
  config = {
    greeting = { type = "string", default = "hello" },
    limit = { type = "integer", minimum = 1, default = 3 },
  },
  validate = function(config)
    if config.greeting == "boom" then return "greeting must not be boom" end
  end,
  hook_timeout = "250ms",
}

local steps = p:key("everything.steps", { scope = "run", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" } })
local seen = p:key("everything.seen", { reducer = "append", default = {} })
local tags = p:key("everything.tags", { reducer = "union" })
local info = p:key("everything.info", { reducer = "merge", default = {} })
local maxv = p:key("everything.max", { reducer = function(value, update) if value == nil or update > value then return update end return value end })
local visits = p:key("everything.visits", { scope = "thread", reducer = "add", default = 0 })
local log = p:key("everything.log", { reducer = "append", default = {} })

p:on("run_start", function(ctx)
  ctx:update(visits, 1)
  ctx:update(info, { run = ctx.run.id, agent = ctx.run.agent_id, gone = "x" })
  ctx:update(log, "run_start:" .. ctx.phase .. ":" .. ctx.config.greeting .. ":" .. ctx.config.limit)
  ctx:update(log, "now:" .. tostring(ctx:now()))
  ctx:update(log, "messages:" .. #ctx.messages .. ":" .. ctx.messages[#ctx.messages].role)
  ctx:update(log, "util:" .. util.shout("hi"))
end)

p:on("step_start", function(ctx)
  ctx:update(steps, 1)
  ctx:update(maxv, ctx.run.step * 10)
  ctx:update(maxv, 5)
  ctx:update(info, { gone = awaken.null, step = ctx.run.step })
  ctx:schedule("everything.note", { text = "step " .. ctx.run.step })
  ctx:schedule("runtime.add_context_message", { key = "everything.hint", content = "be nice", target = "system", kind = "ephemeral" })
end)

p:action("everything.note", { phase = "before_inference", schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } } },
  function(ctx, payload)
    ctx:update(seen, payload.text)
    ctx:emit("everything.observed", { text = payload.text })
  end)

p:effect("everything.observed", function(ctx, payload)
  awaken.log.info("observed", { text = payload.text, steps = ctx:get(steps) })
end)

p:on("after_inference", function(ctx)
  ctx:update(log, "response:" .. ctx.response.text .. ":" .. #ctx.response.tool_calls)
  if ctx.response.usage then ctx:update(log, "tokens:" .. ctx.response.usage.total_tokens) end
end)

p:tool_gate(function(ctx, call)
  if call.name == "shell" then
    if call.args.cmd == "rm" then return awaken.block("rm is not allowed") end
    if call.args.cmd == "ls" and not call.args.safe then
      local args = { cmd = "ls", safe = true }
      return awaken.rewrite(args)
    end
  end
  if call.name == "deploy" and not call.resume then
    return awaken.suspend { message = "deploy?", options = { "yes", "no" }, action = "approve" }
  end
  if call.name == "cached" then return awaken.set_result(awaken.success({ cached = true })) end
end)

p:on("before_tool_execute", function(ctx)
  ctx:update(log, "before:" .. ctx.tool.name .. ":" .. tostring(ctx.tool.args.safe))
end)

p:on("after_tool_execute", function(ctx)
  ctx:update(tags, { ctx.tool.name, "tool" })
  ctx:update(log, "after:" .. ctx.tool.name .. ":" .. ctx.tool.result.status)
end)

p:tool {
  id = "upper",
  description = "upper-cases text",
  parameters = { text = { type = "string" } },
  execute = function(ctx, args)
    ctx:update(log, "tool:upper")
    if args.text == "fail" then return awaken.error("cannot") end
    local decoded = awaken.json.decode(awaken.json.encode({ t = args.text:upper() }))
    return awaken.success(decoded.t)
  end,
}

p:transform(function(request)
  table.insert(request.messages, { role = "system", content = "transformed " .. #request.tools })
  request.params.temperature = 0.25
  return request
end)

p:result_transform(function(call, result)
  if type(result.data) == "string" then
    result.data = result.data:gsub("SECRET", "[redacted]")
  end
  return result
end)

p:on("step_end", function(ctx)
  if ctx:get(steps) >= 3 then ctx:stop("enough", "three steps") end
end)

p:on("run_end", function(ctx)
  print("run ended", ctx.run.id)
  awaken.log.warn("bye", { glob = awaken.glob("mcp__github__*", "mcp__github__issues"), path = awaken.glob("src/*.go", "src/a/b.go") })
end)

return p
