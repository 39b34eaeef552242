-- reminder.match: how a rule matches a completed tool call, and the checks
-- of the config that its schema cannot express.
local awaken = require("awaken")

local M = {}

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

-- Tool patterns this plugin understands: exact names and globs. Regexes and
-- argument conditions belong to permission's rule syntax.
function M.check_tool(tool)
  if #tool > 1 and tool:sub(1, 1) == "/" and tool:sub(-1) == "/" then
    return "regex tool patterns are not supported here; use an exact name or a glob such as mcp__github__*"
  end
  if tool:find("%(.*%)%s*$") then
    return "argument conditions such as Name(...) are not supported here; use an exact name or a glob"
  end
end

-- validate(config): what the schema cannot check. Paths are 0-based like
-- the schema's own messages ($.rules[2].tool).
function M.validate(config)
  local problems = {}
  for i, rule in ipairs(config.rules or {}) do
    local at = "rules[" .. (i - 1) .. "]"
    local err = M.check_tool(rule.tool)
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
