-- redact: a result transform that masks secrets in tool results (string
-- data, string values inside table data at any depth, and the message)
-- before the model sees them: the default formats (redact.patterns) and the
-- configured patterns, read from ctx.config (result transforms get a
-- read-only ctx as their last argument).
local awaken = require("awaken")
local scrub = require("redact.scrub")

local REPLACEMENT = "[REDACTED]"

local p = awaken.plugin {
  id = "redact",
  description = "Masks API keys, tokens, private keys and passwords in tool results",
  config = {
    -- Lua patterns to mask besides the defaults (the whole match is replaced)
    patterns = { type = "array", items = { type = "string", minLength = 1 }, default = {} },
    replacement = { type = "string", default = REPLACEMENT },
    -- false leaves out the default patterns
    defaults = { type = "boolean", default = true },
  },
  validate = function(config)
    local problems = {}
    for i, pat in ipairs(config.patterns or {}) do
      local err = scrub.check(pat)
      if err then problems[#problems + 1] = "patterns[" .. (i - 1) .. "]: " .. err end
    end
    if #problems > 0 then return problems end
  end,
  -- the rules compiled once per config: ctx.prepared
  prepare = function(config)
    return scrub.compile(config)
  end,
  -- scanning a large result with every pattern takes longer than most hooks
  hook_timeout = "1s",
}

p:result_transform(function(call, result, ctx)
  if scrub.result(result, ctx.prepared) then return result end
  return nil -- unchanged
end)

return p
