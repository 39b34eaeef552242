-- audit.mask: replaces configured argument fields with "***" in a copy of
-- the arguments.
--
-- An entry without a dot ("password") masks that field at any depth; a
-- dotted entry ("headers.authorization") is a path from the top of the
-- arguments, where "*" matches any field. Lists are transparent: a path
-- continues into each of their items. Field names compare case-insensitively.
local M = {}

M.MASK = "***"

-- Compiles the config's list into {anywhere = {name = true}, paths = {{...}}}.
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

-- Copies v, masking what c selects. paths holds the dotted paths still in
-- play at this depth (each with the index of its next segment).
local function walk(v, c, active)
  if type(v) ~= "table" then return v end
  local out = {}
  if is_list(v) then
    for i, item in ipairs(v) do out[i] = walk(item, c, active) end
    return out
  end
  for k, item in pairs(v) do
    local name = type(k) == "string" and k:lower() or tostring(k)
    local masked = c.anywhere[name]
    local next_active = {}
    for _, a in ipairs(active) do
      local seg = a.path[a.i]
      if seg == "*" or seg == name then
        if a.i == #a.path then
          masked = true
        else
          next_active[#next_active + 1] = { path = a.path, i = a.i + 1 }
        end
      end
    end
    if masked then
      out[k] = M.MASK
    else
      out[k] = walk(item, c, next_active)
    end
  end
  return out
end

-- Returns a masked copy of args.
function M.apply(args, c)
  local active = {}
  for _, path in ipairs(c.paths) do active[#active + 1] = { path = path, i = 1 } end
  return walk(args, c, active)
end

return M
