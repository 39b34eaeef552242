-- Permission rules: the parser, the matcher and the decision.
--
-- Grammar of a rule (the `tool` field of a config rule):
--
--   rule       = tool [ "(" args ")" ]
--   tool       = NAME            exact tool name:  Bash  (mcp__server: every
--                                tool of that MCP server, as in Claude Code)
--              | GLOB            has * ? or [:     mcp__github__*   (awaken.glob)
--              | "/" REGEX "/"   regex on the whole name: /mcp__(gh|gl)__.*/
--                                ("\/" for a "/"; RE2 syntax, awaken.regex)
--   args       = conditions      Edit(file_path ~ "src/**", mode = w)
--              | QUOTED          Bash("npm *")   a glob, quoted
--              | TEXT            Bash(npm *)     a glob: everything up to the final ")"
--   conditions = condition { "," condition }     all of them must hold
--   condition  = path op value
--   path       = KEY { "." KEY | "[" DIGITS "]" | "[*]" }   KEY = [A-Za-z0-9_-]+
--                a.b[*].c: any element of the list b; items[0]: the first item
--   op         = "~" glob | "=" equals | "=~" regex
--              | "!~" not glob | "!=" not equals | "!=~" not regex
--   value      = QUOTED | BARE   QUOTED: "..." with \" and \\ (any other "\x"
--                                is kept as is, for glob and regex escapes);
--                                BARE: up to a space, "," or ")";
--                                a regex value may also be written /.../
--
-- The parenthesised part is read as conditions when it starts with a path
-- and an operator. An operator after a space must be followed by a space, a
-- quote, or (except "~") the closing ")", so Bash(cd ~/src) and Bash(ls ~)
-- stay globs while Edit(a =) is reported as a missing value. Otherwise it is
-- a pattern on the call's primary argument, Claude Code's way, when the
-- call's tool has one (awaken.rules.primary: Bash command, Read, Write, Edit
-- and MultiEdit file_path, Glob and Grep pattern, WebFetch url, WebSearch
-- query, Task prompt...; awaken.rules.specifier matches it): a shell command
-- is split into its simple commands, and the pattern matches a deny or ask
-- rule when any of them matches, an allow rule when every one does, and
-- any deny or ask rule (never an allow rule) when the command cannot be
-- parsed. For any other tool it is a glob (awaken.glob) on the call's only
-- argument when the call has exactly one, or else on all the arguments as
-- JSON with sorted keys (awaken.json.encode).
--
-- Values are compared as strings: a string as is, true/false, numbers and
-- tables as JSON. A path that selects several values (a[*].b) holds when
-- ANY of them satisfies a positive operator; the negated operators are the
-- exact negation (NO value satisfies the positive one), so a missing field
-- satisfies !=, !~ and !=~ and never =, ~ or =~. A glob with a "/" on a
-- value with "." or ".." segments is undecidable (for deny and ask, never
-- for allow) when it reads the text otherwise than the path it names. Regexes match the whole
-- name or value, "." newlines included (as if written (?s)^(?:...)$), and
-- run on awaken.regex: RE2, in time linear in the value. Globs must be
-- valid UTF-8 (Go's regexp compiles them).
--
-- Limits keep a hostile rule cheap: MAX_RULE bytes per rule, and
-- DECISION_BUDGET work units per gate decision for [*] walks.
--
-- Every parsed rule is plain data (strings, numbers, lists), so it can be
-- prepared once per config (awaken.plugin{prepare}), stored or handed to Go
-- and back (the fuzz test does).

local awaken = require("awaken")

local M = {}

M.MAX_RULE = 1024 -- bytes in one rule string
-- The work units one gate decision may spend on path walks; past it a rule
-- is undecidable and counts for deny and ask but never for allow (fail
-- closed).
M.DECISION_BUDGET = 12000

local regexFind = awaken.regex.find
local toolRules = awaken.rules

local sub, byte, find = string.sub, string.byte, string.find

-- truncate shortens s to at most n bytes (then "..."), without cutting a
-- UTF-8 sequence in two.
local function truncate(s, n)
  if #s <= n then return s end
  local cut = n - 3
  while cut > 0 do
    local b = byte(s, cut + 1)
    if b < 0x80 or b > 0xBF then break end -- s[cut+1] starts a character
    cut = cut - 1
  end
  return sub(s, 1, cut) .. "..."
end
M.truncate = truncate

-- quote renders s for an error message, like %q but on one line and short.
local function quote(s)
  s = truncate(s, 160)
  local q = s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == "\\" then return "\\\\" end
    if c == "\n" then return "\\n" end
    if c == "\t" then return "\\t" end
    return string.format("\\%03d", byte(c))
  end)
  return '"' .. q .. '"'
end
M.quote = quote

local function skip(s, i)
  return find(s, "[^%s]", i) or (#s + 1)
end

-- trim strips white space at both ends (by hand: "%s+$" backtracks on a
-- long run of spaces).
local function trim(s)
  local i = find(s, "[^%s]")
  if not i then return "" end
  local j = #s
  while find(sub(s, j, j), "^%s") do j = j - 1 end
  return sub(s, i, j)
end

-- readQuoted reads "..." at s[i] == '"'; returns the text and the index
-- after the closing quote, or nil when the quote is never closed.
local function readQuoted(s, i)
  local buf, j = {}, i + 1
  while true do
    local k = find(s, '[\\"]', j)
    if not k then return nil end
    buf[#buf + 1] = sub(s, j, k - 1)
    if sub(s, k, k) == '"' then
      return table.concat(buf), k + 1
    end
    local nx = sub(s, k + 1, k + 1)
    if nx == '"' or nx == "\\" then
      buf[#buf + 1] = nx
      j = k + 2
    else
      buf[#buf + 1] = "\\" -- kept for glob and regex escapes
      j = k + 1
    end
  end
end

-- readPath reads a path at s[i]; returns the segments, the index after it,
-- or nil and a message.
local function readPath(s, i)
  local name, e = s:match("^([%w_%-]+)()", i)
  if not name then return nil, "expected a field name" end
  local segs = { { k = "key", name = name } }
  while true do
    local c = sub(s, e, e)
    if c == "." then
      local n2, e2 = s:match("^([%w_%-]+)()", e + 1)
      if not n2 then return nil, "expected a field name after ." end
      segs[#segs + 1] = { k = "key", name = n2 }
      e = e2
    elseif c == "[" then
      local idx, e2 = s:match("^%[(%d+)%]()", e)
      if idx then
        if #idx > 9 then return nil, "index too large" end
        segs[#segs + 1] = { k = "index", n = tonumber(idx) }
        e = e2
      elseif find(s, "^%[%*%]", e) then
        segs[#segs + 1] = { k = "any" }
        e = e + 3
      else
        return nil, "expected [N] or [*]"
      end
    else
      return segs, e
    end
  end
end

local OPS = { "!=~", "!=", "!~", "=~", "=", "~" }

local function readOp(s, i)
  for _, op in ipairs(OPS) do
    if sub(s, i, i + #op - 1) == op then return op, i + #op end
  end
end

-- looksLikeConditions decides how the text inside the parentheses (from
-- s[i]) is read: conditions start with a path and an operator; an operator
-- after a space must be followed by a space or a quote (Bash(cd ~/x) and
-- Bash(ls ~) stay globs).
local function looksLikeConditions(s, i)
  local e = s:match("^[%w_%-%.%[%]%*]+()", i)
  if not e then return false end
  local k = skip(s, e)
  local op, after = readOp(s, k)
  if not op then return false end
  if k == e then return true end
  local nx = sub(s, after, after)
  -- so "a == 1" and "a =)" get their errors; "ls ~)" is a glob
  if (op == "=" and nx == "=") or (nx == ")" and op ~= "~") then return true end
  return nx == '"' or (nx ~= "" and find(nx, "^%s") ~= nil)
end

-- validUTF8 reports whether s is valid UTF-8 (as Go's utf8.Valid: no
-- overlong forms, surrogates or code points past U+10FFFF). Globs are
-- compiled by Go's regexp, which refuses anything else.
local function validUTF8(s)
  if not find(s, "[\128-\255]") then return true end
  local i, n = 1, #s
  while i <= n do
    local c = byte(s, i)
    if c < 0x80 then
      i = i + 1
    else
      local len, lo, hi
      if c >= 0xC2 and c <= 0xDF then
        len, lo, hi = 2, 0x80, 0xBF
      elseif c == 0xE0 then
        len, lo, hi = 3, 0xA0, 0xBF
      elseif c == 0xED then
        len, lo, hi = 3, 0x80, 0x9F
      elseif c >= 0xE1 and c <= 0xEF then
        len, lo, hi = 3, 0x80, 0xBF
      elseif c == 0xF0 then
        len, lo, hi = 4, 0x90, 0xBF
      elseif c >= 0xF1 and c <= 0xF3 then
        len, lo, hi = 4, 0x80, 0xBF
      elseif c == 0xF4 then
        len, lo, hi = 4, 0x80, 0x8F
      else
        return false
      end
      if i + len - 1 > n then return false end
      local c2 = byte(s, i + 1)
      if c2 < lo or c2 > hi then return false end
      for k = i + 2, i + len - 1 do
        local ck = byte(s, k)
        if ck < 0x80 or ck > 0xBF then return false end
      end
      i = i + len
    end
  end
  return true
end

-- wholeRegex checks a regex and returns it anchored to match a whole name
-- or value, or nil and the message.
local function wholeRegex(src)
  local ok, err = pcall(regexFind, src, "")
  if not ok then
    return nil, (tostring(err):gsub("^.-awaken%.regex%.find: ", ""))
  end
  return "(?s)^(?:" .. src .. ")$"
end

local function compileRegexValue(v)
  if #v >= 2 and sub(v, 1, 1) == "/" and sub(v, -1) == "/" then
    v = sub(v, 2, -2)
  end
  return wholeRegex(v)
end

local function parseConditions(s, i, fail)
  local conds = {}
  local k = i
  while true do
    k = skip(s, k)
    local start = k
    local path, e = readPath(s, k)
    if not path then return fail(e .. " at " .. quote(sub(s, k, k + 20))) end
    local ptext = sub(s, start, e - 1)
    k = skip(s, e)
    local op, after = readOp(s, k)
    if not op then
      return fail("expected an operator (~ = =~ !~ != !=~) after " .. ptext)
    end
    if op == "=" and sub(s, after, after) == "=" then
      return fail("== is not an operator; use = for equals")
    end
    k = skip(s, after)
    local value
    if sub(s, k, k) == '"' then
      value, k = readQuoted(s, k)
      if not value then return fail("unterminated quote") end
    else
      value = s:match("^[^%s,)]+", k)
      if not value then
        return fail("missing value after " .. ptext .. " " .. op .. ' (write "" for an empty value)')
      end
      k = k + #value
    end
    local cond = { path = path, text = ptext, op = op, value = value }
    if (op == "~" or op == "!~") and not validUTF8(value) then
      return fail("invalid UTF-8 in the glob for " .. ptext)
    end
    if op == "=~" or op == "!=~" then
      local re, err = compileRegexValue(value)
      if not re then return fail("invalid regex " .. quote(value) .. " for " .. ptext .. ": " .. err) end
      cond.re = re
    end
    conds[#conds + 1] = cond
    k = skip(s, k)
    local c = sub(s, k, k)
    if c == "," then
      k = k + 1
    elseif c == ")" then
      if skip(s, k + 1) <= #s then return fail("unexpected text after )") end
      return conds
    elseif c == "" then
      return fail("missing )")
    else
      return fail("expected , or ) after the value of " .. ptext .. " (quote values with spaces)")
    end
  end
end

-- parse reads one rule string. It returns the parsed rule:
--   {source, kind = "exact"|"glob"|"regex", name, re?,
--    mode = "none"|"glob"|"conds", glob?, conds?}
-- or nil and a message naming the problem and the rule.
function M.parse(s)
  if type(s) ~= "string" then return nil, "a rule is a string, not a " .. type(s) end
  if #s > M.MAX_RULE then return nil, "rule longer than " .. M.MAX_RULE .. " bytes" end
  local function fail(msg) return nil, msg .. " in " .. quote(s) end
  local rule = { source = s }
  local i = skip(s, 1)
  if i > #s then return fail("empty rule") end
  if sub(s, i, i) == "/" then
    local j = i + 1
    while j <= #s do
      local c = sub(s, j, j)
      if c == "\\" then
        j = j + 2
      elseif c == "/" then
        break
      else
        j = j + 1
      end
    end
    if j > #s then return fail("unterminated regex (no closing /)") end
    local src = sub(s, i + 1, j - 1)
    if src == "" then return fail("empty regex") end
    local re, err = wholeRegex(src)
    if not re then return fail("invalid regex /" .. truncate(src, 60) .. "/: " .. err) end
    rule.kind, rule.name, rule.re = "regex", src, re
    i = j + 1
  else
    local j = find(s, "(", i, true) or (#s + 1)
    local name = trim(sub(s, i, j - 1))
    if name == "" then return fail("empty tool name") end
    local bad = name:match('[%s,)"]')
    if bad then return fail("unexpected " .. quote(bad) .. " in the tool name") end
    rule.kind = find(name, "[%*%?%[]") and "glob" or "exact"
    if rule.kind == "glob" and not validUTF8(name) then
      return fail("invalid UTF-8 in the tool name glob")
    end
    rule.name = name
    i = j
  end
  i = skip(s, i)
  if i > #s then
    rule.mode = "none"
    return rule
  end
  if sub(s, i, i) ~= "(" then
    return fail("unexpected " .. quote(sub(s, i, i)) .. " after the tool name (argument conditions go in parentheses)")
  end
  local j = skip(s, i + 1)
  if looksLikeConditions(s, j) then
    local conds, err = parseConditions(s, j, fail)
    if not conds then return nil, err end
    rule.mode, rule.conds = "conds", conds
    return rule
  end
  local glob
  if sub(s, j, j) == '"' then
    local k
    glob, k = readQuoted(s, j)
    if not glob then return fail("unterminated quote") end
    k = skip(s, k)
    if sub(s, k, k) ~= ")" then return fail("expected ) after the quoted pattern") end
    if skip(s, k + 1) <= #s then return fail("unexpected text after )") end
  else
    local e = #s
    while e > j and find(sub(s, e, e), "^%s") do e = e - 1 end
    if sub(s, e, e) ~= ")" or e < j then return fail("missing )") end
    glob = trim(sub(s, j, e - 1))
    if glob == "" then return fail("empty argument pattern (write Tool(*) or just Tool)") end
  end
  if not validUTF8(glob) then return fail("invalid UTF-8 in the argument glob") end
  -- the pattern must also read as Claude Code's (it is matched that way on
  -- tools with a primary argument)
  local ok, err = toolRules.specifier(glob)
  if not ok then
    return fail("invalid argument pattern: " .. tostring(err):gsub("^config_invalid: permission rule .- at column %d+: ", ""))
  end
  rule.mode, rule.glob = "glob", glob
  return rule
end

-- str is how a value is compared: strings as they are, the rest as JSON.
local function str(v)
  local t = type(v)
  if t == "string" then return v end
  if t == "boolean" then return tostring(v) end
  return awaken.json.encode(v) or ""
end

-- selectValues walks a path through args and returns every value it
-- reaches (several with [*], none when a field is missing).
local function selectValues(args, path, budget)
  local cur = { args }
  for _, seg in ipairs(path) do
    local nxt = {}
    for _, v in ipairs(cur) do
      if type(v) == "table" then
        if seg.k == "key" then
          local x = v[seg.name]
          if x ~= nil then nxt[#nxt + 1] = x end
        elseif seg.k == "index" then
          local x = v[seg.n + 1]
          if x ~= nil then nxt[#nxt + 1] = x end
        elseif seg.k == "any" then
          for _, x in pairs(v) do
            nxt[#nxt + 1] = x
            budget.left = budget.left - 1
          end
        end
      end
    end
    budget.left = budget.left - #cur
    if budget.left < 0 then return nil end
    cur = nxt
    if #cur == 0 then break end
  end
  return cur
end

-- dotted reports whether a path has a "." or ".." segment or an empty one
-- ("a//b"): a text a path glob reads otherwise than the file it names. The
-- "//" of a URL's scheme (https://) is no empty segment: a glob such as
-- "https://docs.example.com/**" reads the URL as it is.
local function dotted(s)
  return find(s, "^//") ~= nil or find(s, "[^:]//") ~= nil or find(s, "^%.%.?/") ~= nil or
    find(s, "/%.%.?/") ~= nil or find(s, "/%.%.?$") ~= nil
end

-- cleanPath is a path with its ".", ".." and empty segments resolved, as
-- Go's path.Clean does: src/../.env is .env. Up to a first "://" (a URL's
-- scheme) the text is kept as it is and the rest cleaned.
local function cleanPath(s)
  local scheme = find(s, "://", 1, true)
  if scheme then
    local head, rest = sub(s, 1, scheme + 2), sub(s, scheme + 3)
    if rest == "" then return s end
    return head .. cleanPath(rest)
  end
  local abs = sub(s, 1, 1) == "/"
  local out = {}
  for seg in s:gmatch("[^/]+") do
    if seg == ".." then
      if #out > 0 and out[#out] ~= ".." then
        out[#out] = nil
      elseif not abs then
        out[#out + 1] = ".."
      end
    elseif seg ~= "." then
      out[#out + 1] = seg
    end
  end
  local r = table.concat(out, "/")
  if abs then return "/" .. r end
  if r == "" then return "." end
  return r
end
M.clean_path = cleanPath

-- pathGlob matches a path glob (one with a "/") on a value: true or false,
-- or nil when the value has "." or ".." segments and the glob reads it
-- otherwise than the path they resolve to (src/** holds src/../.env, the
-- file .env does not): such a value is undecidable, so it counts for deny
-- and ask rules and never for allow rules.
local function pathGlob(glob, s)
  local r = awaken.glob(glob, s)
  if dotted(s) and awaken.glob(glob, cleanPath(s)) ~= r then return nil end
  return r
end

-- evalCondition returns true, false, or nil and a message when the budget
-- ran out before it could tell.
local function evalCondition(cond, args, budget)
  local vals = selectValues(args, cond.path, budget)
  if not vals then return nil, "step budget exhausted" end
  local op = cond.op
  local neg = sub(op, 1, 1) == "!"
  local base = neg and sub(op, 2) or op
  local found, unknown = false, nil
  for _, v in ipairs(vals) do
    local s = str(v)
    local r, err
    if base == "=" then
      r = (s == cond.value)
    elseif base == "~" then
      if find(cond.value, "/", 1, true) then
        r = pathGlob(cond.value, s)
        if r == nil then err = "a path with . or .. segments that the glob reads otherwise than the path it names" end
      else
        r = awaken.glob(cond.value, s)
      end
    else
      r = regexFind(cond.re, s) ~= nil
    end
    if r == true then
      found = true
      break
    elseif r == nil then
      unknown = err or "undecidable"
    end
  end
  if not found and unknown then return nil, unknown end
  if neg then return not found end
  return found
end

-- onlyArgument is what a single glob Tool(pattern) is matched against.
local function onlyArgument(args, cache)
  local n, only = 0, nil
  for _, v in pairs(args) do
    n = n + 1
    only = v
    if n > 1 then break end
  end
  if n == 1 then return str(only) end
  if cache.json == nil then cache.json = awaken.json.encode(args) or "" end
  return cache.json
end

-- isServer reports whether an exact tool name is Claude Code's mcp__server
-- form, which names every tool of that MCP server (mcp__server__tool).
local function isServer(name)
  return sub(name, 1, 5) == "mcp__" and #name > 5 and not find(name, "__", 6, true)
end

-- serverOf is the mcp__server part of an MCP tool's name, or nil.
local function serverOf(name)
  if sub(name, 1, 5) ~= "mcp__" then return nil end
  local i = find(name, "__", 6, true)
  if not i or i == 6 then return nil end
  return sub(name, 1, i - 1)
end

-- nameMatches reports whether the tool part of a rule matches a name.
local function nameMatches(rule, name)
  local kind = rule.kind
  if kind == "exact" then
    return name == rule.name or isServer(rule.name) and sub(name, 1, #rule.name + 2) == rule.name .. "__"
  end
  if kind == "glob" then return awaken.glob(rule.name, name) end
  if kind == "regex" then return regexFind(rule.re, name) ~= nil end
  return nil, "not a parsed rule"
end

-- specifierMatch matches a glob rule on the call's primary argument, as a
-- rule of behavior b: true or false, or nil when the call's tool has none.
-- call is the gate's call (read in Go) or nil, then name and args are.
-- dirs (a table or ctx), when set, override the directories the spec was
-- compiled with.
local function specifierMatch(rule, b, name, args, call, specs, dirs)
  local spec = specs and specs[rule.glob]
  if not spec then spec = assert(toolRules.specifier(rule.glob)) end
  if call then return spec:match(b, call, dirs) end
  return spec:match(b, name, args, dirs)
end

-- argsMatch reports whether the argument part of a rule holds for a rule of
-- behavior b (where: the call and the compiled specifiers, see M.decide;
-- dirs: the directories that override the specifiers', or nil).
local function argsMatch(rule, args, budget, cache, b, where, dirs)
  local mode = rule.mode
  if mode == "glob" then
    local m = specifierMatch(rule, b, where.name, args, where.call, where.specs, dirs)
    if m ~= nil then return m end
    return awaken.glob(rule.glob, onlyArgument(args, cache))
  elseif mode == "conds" then
    local unknown
    for _, cond in ipairs(rule.conds) do
      local r, err = evalCondition(cond, args, budget)
      if r == false then return false end
      if r == nil then unknown = err end
    end
    if unknown then return nil, unknown end
    return true
  elseif mode == "none" then
    return true
  end
  return nil, "not a parsed rule"
end

-- matches reports whether a parsed rule matches a call: true, false, or
-- nil and a message when a path walk ran out of budget (a table {left =
-- units}, shared by all rules of one decision). cache holds what is
-- computed once per call (the JSON of the arguments). behavior is the list
-- the rule sits in ("deny" when absent): it decides how a pattern on a
-- shell command matches.
function M.matches(rule, name, args, budget, cache, behavior)
  if type(rule) ~= "table" then return nil, "not a parsed rule" end
  if type(name) ~= "string" then return false end
  if type(args) ~= "table" then args = {} end
  budget = budget or { left = M.DECISION_BUDGET }
  local m, err = nameMatches(rule, name)
  if m ~= true then return m, err end
  return argsMatch(rule, args, budget, cache or {}, behavior or "deny", { name = name })
end

local RANK = { exact = 3, glob = 2, regex = 1 }

-- specificity orders rules of one behaviour: exact over glob over regex,
-- then argument conditions over none, then more conditions over fewer (a
-- single glob on the arguments counts as one condition).
function M.specificity(rule)
  local n = 0
  if rule.mode == "glob" then
    n = 1
  elseif rule.mode == "conds" then
    n = #rule.conds
  end
  return (RANK[rule.kind] or 0) * 1000000 + (n > 0 and 100000 or 0) + math.min(n, 99999)
end

-- hides_outright reports whether an entry denies its tools outright: an
-- exact or glob rule without argument conditions (see M.hides).
local function hides_outright(e)
  local r = e.rule
  return e.behavior == "deny" and r.mode == "none" and (r.kind == "exact" or r.kind == "glob")
end

-- compile parses a config's rules once (the plugin's prepare does it per
-- config): it returns the compiled config and the messages "rules[i].tool:
-- ..." of invalid rules (left out). The compiled config is plain data:
--   {entries = {{index (0-based, as in config errors), behavior, rule,
--    score}, ...}, exact = {name = {entry numbers}}, patterned = {entry
--    numbers of glob and regex rules}, hiding, problems}
-- exact and patterned find the entries that can apply to a tool name
-- without matching every rule against it.
function M.compile(list)
  if type(list) ~= "table" then list = {} end
  local entries, problems, exact, patterned = {}, {}, {}, {}
  local hiding, servers = false, false
  for i, r in ipairs(list) do
    local tool = type(r) == "table" and r.tool or nil
    local rule, err = M.parse(tool)
    if rule then
      local e = { index = i - 1, behavior = r.behavior, rule = rule, score = M.specificity(rule) }
      entries[#entries + 1] = e
      if rule.kind == "exact" then
        if isServer(rule.name) then servers = true end
        local at = exact[rule.name]
        if not at then
          at = {}
          exact[rule.name] = at
        end
        at[#at + 1] = #entries
      else
        patterned[#patterned + 1] = #entries
      end
      if hides_outright(e) then hiding = true end
    else
      problems[#problems + 1] = string.format("rules[%d].tool: %s", i - 1, err)
    end
  end
  local cfg = { entries = entries, exact = exact, patterned = patterned, hiding = hiding, servers = servers, problems = problems }
  return cfg, problems
end

-- specifiers compiles the argument pattern of every glob rule of a
-- compiled config once (the plugin's prepare does it): glob -> compiled
-- specifier, for M.decide. dirs ({project_dir, home_dir}) anchor path
-- patterns. Not plain data: it lives in ctx.prepared only.
function M.specifiers(cfg, dirs)
  local specs = {}
  for _, e in ipairs(cfg.entries) do
    local glob = e.rule.glob
    if e.rule.mode == "glob" and not specs[glob] then
      specs[glob] = assert(toolRules.specifier(glob, dirs))
    end
  end
  return specs
end

-- validate returns the messages for every invalid rule, or nil.
function M.validate(list)
  local _, problems = M.compile(list)
  if #problems > 0 then return problems end
  return nil
end

local NONE = {} -- no entries (never written)

-- candidates lists the entries whose tool part matches name, in config
-- order within exact and within patterned rules (exact ones first: they
-- outrank the others, so the order between the two changes no decision),
-- and whether one of them reads the arguments: args is false, "go" (only
-- patterns on the tool's primary argument, which read the gate's call in
-- Go) or "lua" (the call's arguments must be read in Lua). (Two fields:
-- a third costs a gate three allocations.)
function M.candidates(cfg, name)
  local entries = cfg.entries
  local list, args, lua, glob = {}, false, false, false
  local exact = cfg.exact
  for pass = 1, 2 do
    local at = NONE
    if pass == 1 then
      at = exact[name] or NONE
    elseif cfg.servers then -- mcp__server names all its tools
      local server = serverOf(name)
      at = server and exact[server] or NONE
    end
    for k = 1, #at do
      local e = entries[at[k]]
      list[#list + 1] = e
      local mode = e.rule.mode
      if mode == "glob" then
        args, glob = true, true
      elseif mode == "conds" then
        args, lua = true, true
      end
    end
  end
  local patterned = cfg.patterned
  for k = 1, #patterned do
    local e = entries[patterned[k]]
    if nameMatches(e.rule, name) then
      list[#list + 1] = e
      local mode = e.rule.mode
      if mode == "glob" then
        args, glob = true, true
      elseif mode == "conds" then
        args, lua = true, true
      end
    end
  end
  -- a glob on a tool without a primary argument is matched in Lua
  if lua or glob and not toolRules.primary(name) then
    args = "lua"
  elseif args then
    args = "go"
  end
  return { list = list, args = args }
end

-- decide picks the behaviour for a call from a compiled config: deny over
-- allow over ask, and within the winning behaviour the most specific rule
-- (the first one on a tie). It returns the behaviour and the winning entry,
-- or default and nil when no rule matches. A rule that cannot be decided
-- within the budget counts for deny and ask, never for allow (fail closed).
-- c is M.candidates(cfg, name) when the caller has it; call is the gate's
-- call (or ctx.tool) and specs M.specifiers(cfg), when the caller has
-- them: a pattern on a primary argument then reads the call in Go. dirs
-- ({cwd = ...}, or a hook's ctx: its run's cwd), when set, override the
-- directories specs anchor paths at.
function M.decide(cfg, name, args, default, c, call, specs, dirs)
  if type(name) ~= "string" then return default, nil end
  if type(args) ~= "table" then args = {} end
  c = c or M.candidates(cfg, name)
  local where
  local list = c.list
  local deny, allow, ask
  local budget, cache
  for k = 1, #list do
    local e = list[k]
    local b = e.behavior
    local cur
    if b == "deny" then
      cur = deny
    elseif b == "allow" then
      cur = allow
    else
      cur = ask
    end
    -- a rule that cannot beat the current winner need not be matched, and
    -- once a deny matched only more specific denies matter
    if (not cur or e.score > cur.score) and (b == "deny" or not deny) then
      local m
      if e.rule.mode == "none" then
        m = true
      else
        if not budget then
          budget, cache = { left = M.DECISION_BUDGET }, {}
          where = { name = name, call = call, specs = specs }
        end
        m = argsMatch(e.rule, args, budget, cache, b, where, dirs)
      end
      if m == true or (m == nil and b ~= "allow") then
        if b == "deny" then
          deny = e
        elseif b == "allow" then
          allow = e
        else
          ask = e
        end
      end
    end
  end
  if deny then return "deny", deny end
  if allow then return "allow", allow end
  if ask then return "ask", ask end
  return default, nil
end

-- hides reports whether the tool is denied outright by an exact or glob
-- rule without argument conditions: such tools are not offered at all.
function M.hides(cfg, name)
  if not cfg.hiding then return false end
  for _, e in ipairs(M.candidates(cfg, name).list) do
    if hides_outright(e) then return true end
  end
  return false
end

-- can_hide reports whether some rule of a compiled config denies tools
-- outright, so that M.hides can be true for some name.
function M.can_hide(cfg)
  return cfg.hiding
end

-- needs_args reports whether deciding about a call to the tool name reads
-- the call's arguments: some rule that names the tool has argument
-- conditions. When none has, M.decide can be given any table for them.
function M.needs_args(cfg, name)
  if type(name) ~= "string" then return false end
  return M.candidates(cfg, name).args ~= false
end

-- signature identifies "the same call" for thread rules: the tool name and
-- its arguments as canonical JSON (sorted keys), so {a=1,b=2} and {b=2,a=1}
-- are the same call and {a=1} and {a=1,b=2} are not.
function M.signature(name, args)
  return tostring(name) .. "\n" .. (awaken.json.encode(args or {}) or "")
end

return M
