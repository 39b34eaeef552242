-- audit.mask: replaces configured argument fields with "***" in a copy of
-- the arguments.
--
-- An entry without a dot ("password") masks that field at any depth; a
-- dotted entry ("headers.authorization") is a path from the top of the
-- arguments, where "*" matches any field. Lists are transparent: a path
-- continues into each of their items. Field names compare case-insensitively.
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

return M
