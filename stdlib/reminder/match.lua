-- reminder.match: how a rule matches a completed tool call, and the checks
-- of the config that its schema cannot express.
--
-- A rule's tool pattern has the permission plugin's rule syntax (exact name,
-- glob, /regex/, argument conditions such as Bash(npm *) or
-- Edit(file_path ~ "src/**")); permission.rules parses and matches it.
local awaken = require("awaken")
local rules = require("permission.rules")

local M = {}

-- The work one call's tool patterns may spend on regexes and path walks.
M.DECISION_BUDGET = rules.DECISION_BUDGET

-- tool_rule returns the parsed tool pattern, or nil and a message. The
-- plugin parses its patterns once per config (prepare).
function M.tool_rule(pattern)
  local r, err = rules.parse(pattern)
  if not r then return nil, err or "invalid tool pattern" end
  return r
end

-- Whether a parsed tool pattern matches a call. Exact names and globs
-- without argument conditions are decided here; the others by
-- permission.rules, with st = {budget, cache, args} shared by the rules of
-- one call (made by the caller on first need; args read from tool then). A
-- pattern that cannot be decided within the budget does not match.
-- server reports whether an exact tool pattern is Claude Code's
-- mcp__server form, which names every tool of that MCP server
-- (mcp__server__tool): permission.rules matches those.
function M.server(rule)
  local n = rule.name
  return rule.kind == "exact" and n:sub(1, 5) == "mcp__" and #n > 5 and not n:find("__", 6, true)
end

function M.simple(rule, name)
  if rule.mode == "none" then
    if rule.kind == "exact" and not M.server(rule) then return rule.name == name end
    if rule.kind == "glob" then return awaken.glob(rule.name, name) end
  end
  return nil
end

function M.tool(rule, name, tool, st)
  local args = nil
  if rule.mode ~= "none" then
    args = st.args
    if args == nil then
      args = tool.args
      st.args = args
    end
  end
  return rules.matches(rule, name, args, st.budget, st.cache) == true
end

-- Parses a field path such as "a.b", "items[0].name" into a list of steps:
-- strings for fields, numbers (1-based, for Lua) for list indexes written
-- 0-based. Returns nil and a message for a malformed path.
function M.parse_path(path)
  local steps = {}
  for part in (path .. "."):gmatch("(.-)%.") do
    local name, rest = part:match("^([^%[%]]*)(.*)$")
    if name == "" and rest == "" then
      return nil, "empty segment in path \"" .. path .. "\" (write fields as a.b, list items as items[0])"
    end
    if name ~= "" then steps[#steps + 1] = name end
    while rest ~= "" do
      local n, after = rest:match("^%[(%d+)%](.*)$")
      if not n then
        return nil, "bad index in path \"" .. path .. "\": write list items as items[0]"
      end
      steps[#steps + 1] = tonumber(n) + 1
      rest = after
    end
  end
  return steps
end

-- Follows a parsed path into a value; nil when a step is missing.
function M.resolve(value, steps)
  for _, s in ipairs(steps) do
    if type(value) ~= "table" then return nil end
    value = value[s]
  end
  return value
end

-- The result as text: string data as is, other data as JSON; for an error,
-- its message (or its data when it has no message).
function M.result_text(result)
  if result.status == "error" and result.message and result.message ~= "" then
    return result.message
  end
  local data = result.data
  if data == nil then return result.message or "" end
  if type(data) == "string" then return data end
  return awaken.json.encode(data) or ""
end

-- The value field paths resolve in: table data, or string data that holds
-- a JSON object or list.
function M.result_data(result)
  local data = result.data
  if type(data) == "string" and data:find("^%s*[%[{]") then
    local decoded = awaken.json.decode(data)
    return decoded
  end
  return data
end

-- A scalar as text for comparisons ("1" and 1 compare equal); tables as JSON.
local function text_of(v)
  if type(v) == "table" then return awaken.json.encode(v) or "" end
  return tostring(v)
end

-- Applies one field condition {path, op, value} to the resolved value.
function M.compare(actual, op, want)
  if op == "~" then
    return actual ~= nil and awaken.glob(want, text_of(actual))
  end
  local equal = actual ~= nil and (actual == want or text_of(actual) == text_of(want))
  if op == "!=" then return not equal end
  return equal
end

-- Whether a result satisfies a rule's output conditions (all must hold).
-- view memoizes the text and the decoded data across the rules of a call.
function M.output(output, result, view)
  if output == nil then return true end
  if output.status and output.status ~= result.status then return false end
  if output.content then
    view.text = view.text or M.result_text(result)
    if not awaken.glob(output.content, view.text) then return false end
  end
  if output.fields and #output.fields > 0 then
    if view.data == nil then view.data = M.result_data(result) or false end
    for _, f in ipairs(output.fields) do
      local steps = M.parse_path(f.path)
      local actual = nil
      if steps and view.data then actual = M.resolve(view.data, steps) end
      if not M.compare(actual, f.op, f.value) then return false end
    end
  end
  return true
end

-- validate(config): what the schema cannot check. Paths are 0-based like
-- the schema's own messages ($.rules[2].tool).
function M.validate(config)
  local problems = {}
  for i, rule in ipairs(config.rules or {}) do
    local at = "rules[" .. (i - 1) .. "]"
    local _, err = M.tool_rule(rule.tool)
    if err then problems[#problems + 1] = at .. ".tool: " .. err end
    local fields = rule.output and rule.output.fields or {}
    for j, f in ipairs(fields) do
      local fat = at .. ".output.fields[" .. (j - 1) .. "]"
      local _, perr = M.parse_path(f.path)
      if perr then problems[#problems + 1] = fat .. ".path: " .. perr end
      if f.op == "~" and type(f.value) ~= "string" then
        problems[#problems + 1] = fat .. ".value: the ~ operator takes a glob string"
      end
      if f.value == nil or f.value == awaken.null then
        problems[#problems + 1] = fat .. ".value: give a value to compare with"
      end
    end
  end
  if #problems > 0 then return problems end
end

return M
