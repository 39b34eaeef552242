-- redact: a result transform that masks secrets in tool results (string
-- data, string values inside table data at any depth, and the message)
-- before the model sees them.
--
-- The transform cannot read this plugin's config today: result transforms
-- get (call, result) and no ctx. It therefore applies the default patterns
-- with the default replacement, and validate refuses a config that asks for
-- anything else, rather than ignoring it silently. Once transforms get a
-- read-only ctx as a third argument, set CONFIG_REACHES_TRANSFORM to true:
-- the transform below already uses ctx.config when it is given.
local awaken = require("awaken")
local scrub = require("redact.scrub")

local CONFIG_REACHES_TRANSFORM = false
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
    for i, pat in ipairs(config.patterns) do
      local err = scrub.check(pat)
      if err then problems[#problems + 1] = "patterns[" .. (i - 1) .. "]: " .. err end
    end
    if #problems == 0 and not CONFIG_REACHES_TRANSFORM and
        (#config.patterns > 0 or config.replacement ~= REPLACEMENT or config.defaults == false) then
      problems[#problems + 1] = "patterns, replacement and defaults cannot take effect yet: result transforms " ..
        "do not receive the plugin's config in this runtime, so only the default patterns apply; remove these settings"
    end
    if #problems > 0 then return problems end
  end,
  -- scanning a large result with every pattern takes longer than most hooks
  hook_timeout = "1s",
}

-- Compiled once: the rules of the default config.
local DEFAULT = scrub.compile({ defaults = true, patterns = {}, replacement = REPLACEMENT })

p:result_transform(function(call, result, ctx)
  local c = DEFAULT
  if ctx ~= nil then c = scrub.compile(ctx.config) end
  if scrub.result(result, c) then return result end
  return nil -- unchanged
end)

return p
