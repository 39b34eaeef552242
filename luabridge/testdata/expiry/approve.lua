local awaken = require("awaken")
local p = awaken.plugin { id = "approve" }

-- deploy waits an hour for a human, then is cancelled; migrate waits ten
-- minutes, then goes ahead. A resumed call passes; the gate sees why.
p:tool_gate(function(ctx, call)
  if call.resume then
    if call.resume.reason == "expired" and call.name == "deploy" then
      return awaken.block("an expired deploy never runs")
    end
    return nil
  end
  if call.name == "deploy" then
    return awaken.suspend { message = "Deploy?", timeout = "1h" }
  end
  if call.name == "migrate" then
    return awaken.suspend { message = "Migrate?", timeout = "10m", on_timeout = "resume" }
  end
end)
return p
