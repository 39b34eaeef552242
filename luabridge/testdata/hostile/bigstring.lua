-- A string doubled past 1 GiB.
local awaken = require("awaken")
local p = awaken.plugin { id = "bigstring" }
p:on("step_start", function(ctx)
  local s = "x"
  for i = 1, 31 do s = s .. s end
  ctx:update("bigstring.len", #s)
end)
p:key("bigstring.len", {})
return p
