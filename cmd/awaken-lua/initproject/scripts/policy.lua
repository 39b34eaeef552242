-- policy: the agent may write only where the config says (writable globs);
-- any other write is blocked, and the model reads why.
local awaken = require("awaken")

local p = awaken.plugin {
  description = "Blocks file writes outside the writable globs",
  config = {
    writable = { type = "array", items = { type = "string" }, default = { "docs/**" } },
  },
}

p:tool_gate(function(ctx, call)
  if call.name ~= "fs_write" then return nil end
  local path = tostring(call.args.path or "")
  for _, glob in ipairs(ctx.config.writable) do
    if awaken.glob(glob, path) then return nil end
  end
  -- no "policy:" prefix: the trace and the journal name the deciding plugin
  return awaken.block(path .. " is not writable; write under " .. table.concat(ctx.config.writable, ", "))
end)

return p
