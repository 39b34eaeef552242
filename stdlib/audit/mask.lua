-- audit.mask: replaces configured argument fields with "***" in a copy of
-- the arguments.
--
-- An entry without a dot ("password") masks that field at any depth; a
-- dotted entry ("headers.authorization") is a path from the top of the
-- arguments, where "*" matches any field. Lists are transparent: a path
-- continues into each of their items. Field names compare case-insensitively.
local awaken = require("awaken")

local M = {}

M.MASK = "***"

-- Compiles the config's list into {anywhere = {name = true}, paths = {{...}}}
-- (the plugin does it once per config: ctx.prepared).
function M.compile(list)
  local c = { anywhere = {}, paths = {} }
  for _, entry in ipairs(list or {}) do
    local e = entry:lower()
    if e:find(".", 1, true) then
      local path = {}
      for seg in e:gmatch("[^%.]+") do path[#path + 1] = seg end
      c.paths[#c.paths + 1] = path
    else
      c.anywhere[e] = true
    end
  end
  return c
end

-- Checks one entry; returns a message for a malformed one.
function M.check(entry)
  if entry == "" then return "empty field name" end
  if entry:find("^%.") or entry:find("%.$") or entry:find("..", 1, true) then
    return "empty segment in \"" .. entry .. "\" (write nested fields as headers.authorization)"
  end
end

local function is_list(t)
  return t[1] ~= nil or next(t) == nil
end

local NONE = {} -- no dotted path in play (never written)

-- Field names lower-cased, by name: argument names are few and recur on
-- every call. Bounded; it changes no result.
local lowered, nlowered = {}, 0
local LOWERED_MAX = 512

local function lower_name(k)
  local name = lowered[k]
  if name == nil then
    name = k:lower()
    if nlowered >= LOWERED_MAX then lowered, nlowered = {}, 0 end
    lowered[k] = name
    nlowered = nlowered + 1
  end
  return name
end

-- Masks what c selects in v, copying only the tables on the way to a masked
-- field: returns v itself when nothing in it is masked, which is the common
-- case and allocates nothing. active holds the dotted paths still in play
-- at this depth (each with the index of its next segment).
local function walk(v, c, active)
  if type(v) ~= "table" then return v end
  local out
  if is_list(v) then
    for i, item in ipairs(v) do
      local w = walk(item, c, active)
      if w ~= item then
        if out == nil then
          out = {}
          for j, x in ipairs(v) do out[j] = x end
        end
        out[i] = w
      end
    end
    return out or v
  end
  local anywhere = c.anywhere
  for k, item in pairs(v) do
    local name = type(k) == "string" and lower_name(k) or tostring(k)
    local masked = anywhere[name]
    local next_active = NONE
    if not masked and #active > 0 then
      for _, a in ipairs(active) do
        local seg = a.path[a.i]
        if seg == "*" or seg == name then
          if a.i == #a.path then
            masked = true
          else
            if next_active == NONE then next_active = {} end
            next_active[#next_active + 1] = { path = a.path, i = a.i + 1 }
          end
        end
      end
    end
    local w = M.MASK
    if not masked then w = walk(item, c, next_active) end
    if w ~= item then
      if out == nil then
        out = {}
        for j, x in pairs(v) do out[j] = x end
      end
      out[k] = w
    end
  end
  return out or v
end

-- Returns args with what c selects masked: a copy where anything is masked
-- (args itself is never changed), args itself otherwise.
function M.apply(args, c)
  local active = NONE
  if #c.paths > 0 then
    active = {}
    for _, path in ipairs(c.paths) do active[#active + 1] = { path = path, i = 1 } end
  end
  return walk(args, c, active)
end

-- The values a mask hid: every string (and number or boolean, as text)
-- under a field that masked (a copy from M.apply) shows as MASK and args
-- does not. Nothing when masked is args itself (nothing was masked).
local function leaves(v, out)
  local t = type(v)
  if t == "string" then
    if v ~= "" then out[#out + 1] = v end
  elseif t == "number" or t == "boolean" then
    out[#out + 1] = tostring(v)
  elseif t == "table" then
    for _, x in pairs(v) do leaves(x, out) end
  end
end

local function hidden(orig, masked, out)
  if orig == masked or type(orig) ~= "table" or type(masked) ~= "table" then return end
  for k, v in pairs(orig) do
    local m = masked[k]
    if m == M.MASK and v ~= M.MASK then
      leaves(v, out)
    elseif type(v) == "table" then
      hidden(v, m, out)
    end
  end
end

function M.hidden(args, masked)
  local out = {}
  hidden(args, masked, out)
  return out
end

-- Returns text with every value of values (M.hidden) replaced by MASK
-- where it shows as a JSON string ("value", for any value) and, for a
-- value of M.BARE_MIN characters or more, wherever it shows, as it is or
-- as it shows inside a JSON string: a reason such as a permission
-- question ("Allow login {"password":"..."}?") quotes the arguments the
-- records mask. (A shorter value masked wherever it shows would mask
-- parts of words.) A JSON string cut short by "..." (a question shortens
-- the arguments it quotes, errs.Clip a message) whose text begins a value
-- is masked too: "hunt..." would show the start of "hunter2".
M.BARE_MIN = 4

function M.text(text, values)
  if type(text) ~= "string" or #values == 0 then return text end
  local forms = {}
  local function add(f, repl) forms[#forms + 1] = { f = f, repl = repl } end
  for _, v in ipairs(values) do
    local j = awaken.json.encode(v) or ('"' .. v .. '"')
    add(j, '"' .. M.MASK .. '"')
    if #v >= M.BARE_MIN then
      add(v, M.MASK)
      if j:sub(2, -2) ~= v then add(j:sub(2, -2), M.MASK) end
    end
  end
  -- longer first, so a value that holds another is masked whole
  table.sort(forms, function(a, b) return #a.f > #b.f end)
  local contents = {}
  for _, x in ipairs(forms) do
    text = text:gsub(x.f:gsub("%p", "%%%0"), (x.repl:gsub("%%", "%%%%")))
    if x.repl ~= M.MASK then contents[#contents + 1] = x.f:sub(2, -2) end
  end
  if not text:find("...", 1, true) then return text end
  return (text:gsub('"([^"]*)%.%.%.', function(cut)
    for _, c in ipairs(contents) do
      if cut ~= "" and #cut <= #c and c:sub(1, #cut) == cut then return '"' .. M.MASK .. "..." end
    end
  end))
end

return M
