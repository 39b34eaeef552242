-- guard keeps the agent out of secrets: reading a file that matches one of
-- the configured globs is answered with an error result the model can read,
-- instead of running the tool. It counts refusals per thread.
local awaken = require("awaken")

local p = awaken.plugin {
  description = "Keeps the agent away from secret files",
  config = {
    secrets = { type = "array", items = { type = "string" }, default = { ".env", "*.pem", "**/id_rsa" } },
  },
}

local refusals = p:key("guard.refusals", {
  scope = "thread", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" },
})

local file_tools = { fs_read = true, fs_write = true }

p:tool_gate(function(ctx, call)
  local path = call.args.path
  if not (file_tools[call.name] and type(path) == "string") then return nil end
  for _, pattern in ipairs(ctx.config.secrets) do
    if awaken.glob(pattern, path) then
      return awaken.set_result(awaken.error("guard: " .. path .. " holds secrets and is off limits"))
    end
  end
end)

p:on("after_tool_execute", function(ctx)
  local result = ctx.tool.result
  if result.status == "error" and (result.message or ""):find("^guard:") then
    ctx:update(refusals, 1)
  end
end)

return p
