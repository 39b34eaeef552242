-- redact.scrub: applies secret patterns to text, to tables of data
-- (recursively, values only) and to tool results.
local defaults = require("redact.patterns")

local M = {}

-- What replaces a text that could not be scanned (a pattern ran out of its
-- step budget): fail closed, the model sees none of it.
M.UNSCANNABLE = "[REDACTED: this text could not be scanned for secrets]"

-- Checks the syntax of a Lua pattern as Lua 5.1 reads it; returns a message
-- for a malformed one. (The matcher itself reports errors only where it
-- gets to them, so a bad tail could otherwise pass a trial match.)
local function check_syntax(pat)
  local i, n, depth = 1, #pat, 0
  -- the index after a set starting at j ("[...]"), nil when it never closes
  local function skip_set(j)
    j = j + 1
    if pat:sub(j, j) == "^" then j = j + 1 end
    repeat
      if j > n then return nil end
      local c = pat:sub(j, j)
      j = j + 1
      if c == "%" then
        if j > n then return nil end
        j = j + 1
      end
    until pat:sub(j, j) == "]"
    return j + 1
  end
  while i <= n do
    local c = pat:sub(i, i)
    if c == "%" then
      local d = pat:sub(i + 1, i + 1)
      if d == "" then return "the pattern ends with %" end
      if d == "b" then
        if i + 3 > n then return "%b needs two characters, as in %b()" end
        i = i + 4
      elseif d == "f" then
        if pat:sub(i + 2, i + 2) ~= "[" then return "missing [ after %f" end
        i = skip_set(i + 2)
        if not i then return "missing ] in a set" end
      else
        i = i + 2
      end
    elseif c == "[" then
      i = skip_set(i)
      if not i then return "missing ] in a set" end
    elseif c == "(" then
      depth = depth + 1
      i = i + 1
    elseif c == ")" then
      depth = depth - 1
      if depth < 0 then return "a ) without its (" end
      i = i + 1
    else
      i = i + 1
    end
  end
  if depth ~= 0 then return "an unfinished capture (a ( without its ))" end
end

-- Texts a configured pattern is tried on: errors the syntax check misses
-- show, and so does a pattern that matches empty text (it would insert the
-- replacement between every character).
local SAMPLES = { "", "a", "Z", "0", " ", "-", "_", "\n", "x y", "sk-abc" }

-- Checks a configured pattern; returns a message for an unusable one.
function M.check(pat)
  local err = check_syntax(pat)
  if err then return err end
  for _, s in ipairs(SAMPLES) do
    local ok, first, last = pcall(string.find, s, pat)
    if not ok then return (tostring(first):gsub("^.-:%d+: ", "")) end
    if first and last < first then
      return "it can match empty text; make it match at least one character"
    end
  end
end

-- The prefilter of a list of rules: gates, each a plain substring (in the
-- lower-cased text when nocase) with the hints it stands for, {rule index,
-- hint (nil when the hint is the gate itself)}, in order of first
-- appearance. One search for a gate that does not occur rules out all the
-- rules behind it; rules without hints (configured patterns) are always
-- tried, and make `always` true.
local function gates_of(rules)
  local gates, by_key, always = {}, {}, false
  for i, rule in ipairs(rules) do
    local hints = rule.hints
    if hints == nil then
      always = true
    else
      local nocase = rule.nocase and true or false
      for _, hint in ipairs(hints) do
        local needle = rule.gate
        if needle == nil or not hint:find(needle, 1, true) then needle = hint end
        local key = (nocase and "i:" or "c:") .. needle
        local gate = by_key[key]
        if gate == nil then
          gate = { needle = needle, nocase = nocase, members = {} }
          by_key[key] = gate
          gates[#gates + 1] = gate
        end
        gate.members[#gate.members + 1] = { rule = i, hint = hint ~= needle and hint or nil }
      end
    end
  end
  return gates, always
end

-- Compiles a config ({defaults?, patterns?, replacement?}) into the rules
-- to apply (the plugin does it once per config: ctx.prepared): the defaults (unless defaults = false), then the configured
-- patterns, whose whole match is replaced; their prefilter (gates_of); and
-- the replacement as gsub replacement strings (no Lua function call per
-- match).
function M.compile(config)
  local rules = {}
  if config.defaults ~= false then
    for _, d in ipairs(defaults) do rules[#rules + 1] = d end
  end
  for _, pat in ipairs(config.patterns or {}) do
    rules[#rules + 1] = { name = pat, pattern = pat }
  end
  local repl = (config.replacement or "[REDACTED]"):gsub("%%", "%%%%")
  local gates, always = gates_of(rules)
  return { rules = rules, gates = gates, always = always, whole = repl, keep = "%1" .. repl }
end

local find, gsub, lower = string.find, string.gsub, string.lower

-- Whether one of a rule's hints occurs in s (lowered: s lower-cased, or
-- nil until needed). Returns the answer and lowered.
local function hinted(rule, s, lowered)
  local hints = rule.hints
  if hints == nil then return true, lowered end
  local text = s
  if rule.nocase then
    lowered = lowered or lower(s)
    text = lowered
  end
  for j = 1, #hints do
    if find(text, hints[j], 1, true) then return true, lowered end
  end
  return false, lowered
end

-- Returns the text with every match replaced, and whether anything was.
-- A rule is tried only when one of its hints occurs in the text. The gates
-- find the rules to try in the text as given (most texts hold no hint, so
-- that is all the work); once a rule replaced something, the following
-- rules' hints are looked for in the new text.
function M.text(s, c)
  local gates = c.gates
  local lowered, hit
  for g = 1, #gates do
    local gate = gates[g]
    local text = s
    if gate.nocase then
      lowered = lowered or lower(s)
      text = lowered
    end
    if find(text, gate.needle, 1, true) then
      local members = gate.members
      for m = 1, #members do
        local member = members[m]
        local hint = member.hint
        if hint == nil or find(text, hint, 1, true) then
          hit = hit or {}
          hit[member.rule] = true
        end
      end
    end
  end
  if hit == nil and not c.always then return s, false end
  local rules = c.rules
  local changed = false
  for i = 1, #rules do
    local rule = rules[i]
    local try
    if changed then
      try, lowered = hinted(rule, s, lowered)
    else
      try = rule.hints == nil or (hit ~= nil and hit[i] == true)
    end
    if try then
      local ok, out, n = pcall(gsub, s, rule.pattern, rule.keep and c.keep or c.whole)
      if not ok then return M.UNSCANNABLE, true end
      if n > 0 then
        s, changed, lowered = out, true, nil
      end
    end
  end
  return s, changed
end

-- Replaces secrets in the string values of a table, at any depth, in place.
function M.table(t, c)
  local changed = false
  for k, v in pairs(t) do
    if type(v) == "string" then
      local out, hit = M.text(v, c)
      if hit then
        t[k] = out
        changed = true
      end
    elseif type(v) == "table" then
      if M.table(v, c) then changed = true end
    end
  end
  return changed
end

-- Redacts a result's data and message in place; reports whether anything
-- changed.
function M.result(result, c)
  local changed = false
  local data = result.data
  if type(data) == "string" then
    local out, hit = M.text(data, c)
    if hit then
      result.data = out
      changed = true
    end
  elseif type(data) == "table" then
    changed = M.table(data, c)
  end
  if type(result.message) == "string" then
    local out, hit = M.text(result.message, c)
    if hit then
      result.message = out
      changed = true
    end
  end
  return changed
end

return M
