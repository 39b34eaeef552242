local awaken = require("awaken")
local p = awaken.plugin {}
p:tool_gate(function(ctx, call)
  if call.name == "deploy" and not call.resume then return awaken.suspend { message = "Deploy?" } end
end)
return p
