-- deferred_tools.catalog: which tools are deferred, how ToolSearch queries
-- find them, and the listing the model reads. Pure functions of the tool
-- list and the plan's settings, so every step recomputes them (nothing goes
-- stale).
local awaken = require("awaken")

local M = {}

M.SEARCH_TOOL = "ToolSearch"
-- The listing's context message starts as this marker and the settings as
-- JSON; the request transform, which sees the tools, replaces it with the
-- listing (transforms cannot read config or state themselves).
M.MARKER = "[deferred_tools.listing]\n"

-- "eager" or "deferred" for a tool: an exact-name rule wins over a glob
-- rule; among rules of one kind the first in the config wins; else default.
function M.mode_of(name, settings)
  local glob_mode
  for _, rule in ipairs(settings.rules or {}) do
    if rule.tool == name then return rule.mode end
    if glob_mode == nil and awaken.glob(rule.tool, name) then glob_mode = rule.mode end
  end
  return glob_mode or settings.default or "deferred"
end

-- Lower-cased words of a text (letters and digits), for keyword matching.
local function words(text)
  local out = {}
  for w in (text or ""):lower():gmatch("%w+") do out[#out + 1] = w end
  return out
end

-- Whether keyword k matches word w: w starts with k ("issue" finds
-- "issues"), or k starts with a word of 3+ letters ("files" finds "file").
local function hits(k, list)
  for _, w in ipairs(list) do
    if w:sub(1, #k) == k or (#w >= 3 and k:sub(1, #w) == w) then return true end
  end
  return false
end

-- Finds candidates ({name, description} in tool order) for one query: with
-- "select:a,b" the tools so named; otherwise by keywords (3+ letters) in
-- names and descriptions. Tools matching the most keywords win, ranked by a
-- score (a keyword in the name counts 3, in the description 1); at most n.
function M.search(candidates, query, n)
  query = query:match("^%s*(.-)%s*$")
  local selected = query:match("^select:(.*)$")
  if selected then
    local want = {}
    for name in selected:gmatch("[^,%s]+") do want[name:lower()] = true end
    local out = {}
    for _, t in ipairs(candidates) do
      if want[t.name:lower()] then out[#out + 1] = t end
    end
    return out
  end
  local keys = {}
  for _, w in ipairs(words(query)) do
    if #w >= 3 then keys[#keys + 1] = w end
  end
  local whole = query:lower()
  local ranked, best = {}, 0
  for i, t in ipairs(candidates) do
    local name_words, desc_words = words(t.name), words(t.description)
    local matched, score = 0, 0
    for _, k in ipairs(keys) do
      local in_name, in_desc = hits(k, name_words), hits(k, desc_words)
      if in_name or in_desc then
        matched = matched + 1
        score = score + (in_name and 3 or 0) + (in_desc and 1 or 0)
      end
    end
    if t.name:lower() == whole then matched, score = #keys + 1, score + 100 end
    if matched > 0 then
      ranked[#ranked + 1] = { tool = t, matched = matched, score = score, index = i }
      if matched > best then best = matched end
    end
  end
  local kept = {}
  for _, r in ipairs(ranked) do
    if r.matched == best then kept[#kept + 1] = r end
  end
  table.sort(kept, function(a, b)
    if a.score ~= b.score then return a.score > b.score end
    return a.index < b.index
  end)
  local out = {}
  for i = 1, math.min(n or 5, #kept) do out[i] = kept[i].tool end
  return out
end

-- Splits the step's tools: offered (eager ones, deferred ones found by a
-- search, and ToolSearch while something is left to find), deferred (still
-- hidden), loaded (names found by searches).
function M.plan(tools, settings)
  local candidates, is_deferred = {}, {}
  for _, t in ipairs(tools) do
    if t.name ~= M.SEARCH_TOOL and M.mode_of(t.name, settings) == "deferred" then
      candidates[#candidates + 1] = t
      is_deferred[t.name] = true
    end
  end
  local loaded, loaded_names = {}, {}
  for _, q in ipairs(settings.searches or {}) do
    for _, t in ipairs(M.search(candidates, q, settings.max_results)) do
      if not loaded[t.name] then
        loaded[t.name] = true
        loaded_names[#loaded_names + 1] = t.name
      end
    end
  end
  local deferred = {}
  for _, t in ipairs(candidates) do
    if not loaded[t.name] then deferred[#deferred + 1] = t end
  end
  local offered = {}
  for _, t in ipairs(tools) do
    if t.name == M.SEARCH_TOOL then
      if #deferred > 0 then offered[#offered + 1] = t end
    elseif not is_deferred[t.name] or loaded[t.name] then
      offered[#offered + 1] = t
    end
  end
  return { offered = offered, deferred = deferred, loaded = loaded_names }
end

-- The first line of a description, at most 160 characters.
local function short(description)
  local line = (description or ""):match("^%s*([^\n]*)") or ""
  if #line > 160 then line = line:sub(1, 157) .. "..." end
  return line
end

-- The listing message for a plan (nil when nothing is deferred).
function M.listing(plan)
  if #plan.deferred == 0 then return nil end
  local lines = {
    "Deferred tools: these tools exist but are not loaded. To use one, call " .. M.SEARCH_TOOL ..
      " with keywords from its name or description, or with \"select:<name>,<name>\"; the tools it finds are offered from your next step.",
  }
  for _, t in ipairs(plan.deferred) do
    local d = short(t.description)
    lines[#lines + 1] = "- " .. t.name .. (d ~= "" and (": " .. d) or "")
  end
  if #plan.loaded > 0 then
    lines[#lines + 1] = "Loaded by earlier searches: " .. table.concat(plan.loaded, ", ") .. "."
  end
  return table.concat(lines, "\n")
end

-- The marker message's content for the plan's settings.
function M.encode(settings)
  return M.MARKER .. awaken.json.encode(settings)
end

-- Finds the marker message; returns its index and the settings.
function M.find(messages)
  for i, m in ipairs(messages) do
    if m.role == "system" and m.content:sub(1, #M.MARKER) == M.MARKER then
      return i, awaken.json.decode(m.content:sub(#M.MARKER + 1))
    end
  end
end

-- Tool patterns this plugin understands: exact names and globs.
function M.check_tool(tool)
  if #tool > 1 and tool:sub(1, 1) == "/" and tool:sub(-1) == "/" then
    return "regex tool patterns are not supported here; use an exact name or a glob such as mcp__github__*"
  end
  if tool:find("%(.*%)%s*$") then
    return "argument conditions such as Name(...) do not apply to deferring tools; use an exact name or a glob"
  end
end

return M
