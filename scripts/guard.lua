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

-- The tools that read or write a file, and the argument that names it:
-- this project's fs tools, and Claude Code's (through the sidecar's hooks).
local file_tools = {
  fs_read = "path", fs_write = "path",
  Read = "file_path", Write = "file_path", Edit = "file_path", MultiEdit = "file_path",
  NotebookEdit = "notebook_path", NotebookRead = "notebook_path",
  Grep = "path", -- Grep's path may name one file, whose lines it prints
}

-- matches reports whether a secrets glob names path. A glob without "/"
-- (.env, *.pem) names a file in any directory; a relative path glob
-- matches an absolute path (Claude Code sends those) at any depth.
local function matches(pattern, path)
  if path:find("\\", 1, true) or path:find("^%a:") then
    -- A Windows path names a file in more ways than one: C:\x\.ENV,
    -- C:x\.env (drive-relative), .env. and .env:stream are .env.
    path = path:gsub("\\", "/"):gsub("^%a:", ""):lower()
    path = path:gsub(":[^/]*$", ""):gsub("[%. ]+$", "")
    pattern = pattern:lower()
  end
  if not pattern:find("/", 1, true) then
    return awaken.glob(pattern, path:match("[^/]*$"))
  end
  if path:sub(1, 1) == "/" and pattern:sub(1, 1) ~= "/" and pattern:sub(1, 3) ~= "**/" then
    pattern = "**/" .. pattern
  end
  return awaken.glob(pattern, path)
end

p:tool_gate(function(ctx, call)
  local arg = file_tools[call.name]
  local path = arg and call.args[arg]
  if type(path) ~= "string" then return nil end
  for _, pattern in ipairs(ctx.config.secrets) do
    if matches(pattern, path) then
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
