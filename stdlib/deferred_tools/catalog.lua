-- deferred_tools.catalog: which tools are deferred, how ToolSearch queries
-- find them, and the listing the model reads. Pure functions of the tool
-- list, the config and the loaded tools, so every step recomputes them
-- (nothing goes stale).
local awaken = require("awaken")

local M = {}

M.SEARCH_TOOL = "ToolSearch"
-- The key of the listing's context message.
M.LISTING_KEY = "deferred_tools.listing"

-- prepare turns settings ({default, rules}) into what deciding a tool's
-- mode needs, once per config (the plugin's ctx.prepared): exact, the mode
-- of the first rule whose pattern is the name itself; globs, the rules
-- whose pattern is a glob (has * ? [ or a \ escape), in order; defers,
-- whether any tool can be deferred; sig, the settings' part of a
-- signature.
function M.prepare(settings)
  local default = settings.default or "deferred"
  local exact, globs = {}, {}
  local defers = default == "deferred"
  local parts, n = { "|", settings.default or "" }, 2
  for _, rule in ipairs(settings.rules or {}) do
    local tool, mode = rule.tool, rule.mode
    if exact[tool] == nil then exact[tool] = mode end
    if tool:find("[%*%?%[\\]") then globs[#globs + 1] = { tool = tool, mode = mode } end
    if mode == "deferred" then defers = true end
    parts[n + 1], parts[n + 2], parts[n + 3] = #tool, tool, mode
    n = n + 3
  end
  return { default = default, exact = exact, globs = globs, defers = defers, sig = table.concat(parts, ":") }
end

-- "eager" or "deferred" for a tool under prepared settings: a rule whose
-- pattern is the name wins, then the first glob rule that matches, else
-- the default.
function M.mode(prep, name)
  local mode = prep.exact[name]
  if mode ~= nil then return mode end
  local globs = prep.globs
  for i = 1, #globs do
    local g = globs[i]
    if awaken.glob(g.tool, name) then return g.mode end
  end
  return prep.default
end

-- mode_of is M.mode for settings not yet prepared.
function M.mode_of(name, settings)
  return M.mode(M.prepare(settings), name)
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

-- Splits the step's candidate tools ({name, description}, in order) for
-- prepared settings and the set of loaded tool names: candidates (the tools in
-- deferred mode, which ToolSearch can find), deferred (those still hidden)
-- and loaded (the names of the candidates loaded by searches).
function M.plan(tools, prep, loaded)
  local candidates, deferred, loaded_names = {}, {}, {}
  for _, t in ipairs(tools) do
    local name = t.name
    if name ~= M.SEARCH_TOOL and M.mode(prep, name) == "deferred" then
      local entry = { name = name, description = t.description or "" }
      candidates[#candidates + 1] = entry
      if loaded[name] then
        loaded_names[#loaded_names + 1] = name
      else
        deferred[#deferred + 1] = entry
      end
    end
  end
  return { candidates = candidates, deferred = deferred, loaded = loaded_names }
end

-- The tools offered to the model out of a request's tools: the deferred
-- ones that were not loaded are left out, and ToolSearch too unless some
-- tool is left out. Returns nil when the list is unchanged.
function M.offered(tools, prep, loaded)
  local keep, hidden, search_at = {}, false, nil
  local search = M.SEARCH_TOOL
  for i = 1, #tools do
    local t = tools[i]
    local name = t.name
    if name == search then
      keep[#keep + 1] = t
      search_at = #keep
    elseif loaded[name] or M.mode(prep, name) ~= "deferred" then
      keep[#keep + 1] = t
    else
      hidden = true
    end
  end
  if hidden then return keep end
  if search_at == nil then return nil end
  table.remove(keep, search_at)
  return keep
end

-- Resolves a ToolSearch query against the step's catalog (the candidates
-- recorded by before_inference) and the set of tools offered in this step.
-- Returns {load = {entries}, available = {names}, unknown = {names}}:
-- with "select:a,b" each name is loaded when hidden, available when
-- offered (deferred or not), unknown otherwise; with keywords the best
-- hidden matches are loaded (at most n), and when none match, the offered
-- candidates that do are named as available.
function M.resolve(catalog, offered, query, n)
  query = query:match("^%s*(.-)%s*$")
  local out = { load = {}, available = {}, unknown = {} }
  local selected = query:match("^select:(.*)$")
  if selected then
    local offered_lower, cat_lower = {}, {}
    for name in pairs(offered) do offered_lower[name:lower()] = name end
    for _, t in ipairs(catalog) do cat_lower[t.name:lower()] = t end
    local seen = {}
    for name in selected:gmatch("[^,%s]+") do
      local k = name:lower()
      if not seen[k] then
        seen[k] = true
        if offered_lower[k] then
          out.available[#out.available + 1] = offered_lower[k]
        elseif cat_lower[k] then
          out.load[#out.load + 1] = cat_lower[k]
        else
          out.unknown[#out.unknown + 1] = name
        end
      end
    end
    return out
  end
  local hidden, shown = {}, {}
  for _, t in ipairs(catalog) do
    if offered[t.name] then shown[#shown + 1] = t else hidden[#hidden + 1] = t end
  end
  out.load = M.search(hidden, query, n)
  if #out.load == 0 then
    for _, t in ipairs(M.search(shown, query, n)) do out.available[#out.available + 1] = t.name end
  end
  return out
end

-- A set of the names in a list.
function M.set(list)
  local out = {}
  for _, name in ipairs(list or {}) do out[name] = true end
  return out
end

-- The signature of what the plan and the listing are worked out from: the
-- step's tools (names and descriptions), the loaded tools and the prepared
-- settings, as one string of length-prefixed parts (so no two inputs share
-- one). The plan is a pure function of them, so a step whose signature did
-- not change need not work anything out again.
function M.signature(tools, loaded, prep)
  local parts, n = {}, 0
  for i = 1, #tools do
    local t = tools[i]
    local name, d = t.name, t.description or ""
    parts[n + 1], parts[n + 2], parts[n + 3], parts[n + 4] = #name, name, #d, d
    n = n + 4
  end
  parts[n + 1] = "|"
  n = n + 1
  for i = 1, #loaded do
    local name = loaded[i]
    parts[n + 1], parts[n + 2] = #name, name
    n = n + 2
  end
  parts[n + 1] = prep.sig
  return table.concat(parts, ":")
end

-- The first line of a description, at most 160 characters.
function M.short(description)
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
    local d = M.short(t.description)
    lines[#lines + 1] = "- " .. t.name .. (d ~= "" and (": " .. d) or "")
  end
  if #plan.loaded > 0 then
    lines[#lines + 1] = "Loaded by earlier searches: " .. table.concat(plan.loaded, ", ") .. "."
  end
  return table.concat(lines, "\n")
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
