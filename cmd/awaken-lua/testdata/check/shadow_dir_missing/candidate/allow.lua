local awaken = require("awaken")
local p = awaken.plugin { description = "allows everything" }
p:tool_gate(function() end)
return p
