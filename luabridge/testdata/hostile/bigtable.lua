-- A table with a billion entries.
local awaken = require("awaken")
local p = awaken.plugin { id = "bigtable" }
p:on("step_start", function(ctx)
  local t = {}
  for i = 1, 1e9 do t[i] = i end
end)
return p
