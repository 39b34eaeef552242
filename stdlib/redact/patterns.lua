-- redact.patterns: the default secret formats, as Lua patterns.
--
-- Each entry: name; pattern; hints, plain substrings one of which must occur
-- before the pattern is tried (cheap, and most results hold none); gate, a
-- plain substring of every hint, shared with other entries, looked for
-- first (so one search rules out several entries: "sk-", "gh", "IA");
-- nocase, to look for the hints in the lower-cased text; keep, when the
-- pattern's first capture is a prefix to keep ("Bearer ", "password=").
-- Every pattern matches only text that holds one of its hints.
--
-- Lua patterns have no {n} repetition, so fixed lengths repeat a class.
local function rep(class, n) return class:rep(n) end

local TOKEN = "[%w_%-]" -- base64url and key alphabets
local BEGIN = "%-%-%-%-%-BEGIN[%u ]*PRIVATE KEY%-%-%-%-%-"
local END = "%-%-%-%-%-END[%u ]*PRIVATE KEY%-%-%-%-%-"
-- a password key and its separator, the key's closing quote included:
-- password=, "password": , \"db_password\":
local PASSWORD = "%f[%w][Pp][Aa][Ss][Ss][Ww][Oo]?[Rr]?[Dd]%f[^%w_]\\?[\"']?%s*[=:]%s*"

return {
  -- a whole PEM private key block, then a block whose end is cut off
  { name = "private_key", hints = { "PRIVATE KEY" }, pattern = BEGIN .. ".-" .. END },
  { name = "private_key_start", hints = { "PRIVATE KEY" }, pattern = BEGIN .. "[%w%s%+/=:,%-]*" },
  -- Anthropic sk-ant-..., then OpenAI sk-... and sk-proj-...
  { name = "anthropic", gate = "sk-", hints = { "sk-ant-" }, pattern = "%f[%w]sk%-ant%-" .. rep(TOKEN, 20) .. TOKEN .. "*" },
  { name = "openai", gate = "sk-", hints = { "sk-" }, pattern = "%f[%w]sk%-" .. rep(TOKEN, 20) .. TOKEN .. "*" },
  -- GitHub tokens: ghp_, gho_, ghs_, ghu_, ghr_ and fine-grained github_pat_
  { name = "github", gate = "gh", hints = { "ghp_", "gho_", "ghs_", "ghu_", "ghr_" }, pattern = "%f[%w]gh[pousr]_" .. rep("%w", 30) .. "%w*" },
  { name = "github_pat", gate = "gh", hints = { "github_pat_" }, pattern = "%f[%w]github_pat_" .. rep("[%w_]", 22) .. "[%w_]*" },
  -- AWS access key ids (long-term AKIA, temporary ASIA)
  { name = "aws_access_key_id", gate = "IA", hints = { "AKIA", "ASIA" }, pattern = "%f[%w]A[KS]IA" .. rep("[%u%d]", 16) .. "%f[^%u%d]" },
  -- Slack tokens xoxb-, xoxa-, xoxp-, xoxr-, xoxs-
  { name = "slack", hints = { "xox" }, pattern = "%f[%w]xox[baprs]%-" .. rep("[%w%-]", 10) .. "[%w%-]*" },
  -- Google API keys
  { name = "google_api_key", hints = { "AIza" }, pattern = "%f[%w]AIza" .. rep(TOKEN, 35) },
  -- JSON Web Tokens: header.payload.signature, both first parts JSON objects
  { name = "jwt", hints = { "eyJ" }, pattern = "%f[%w]eyJ" .. TOKEN .. "+%.eyJ" .. TOKEN .. "+%." .. TOKEN .. "*" },
  -- "Bearer <token>" (16+ characters, so prose such as "a bearer token" stays)
  { name = "bearer", hints = { "bearer" }, nocase = true, keep = true,
    pattern = "(%f[%w][Bb][Ee][Aa][Rr][Ee][Rr]%s+)" .. rep("[%w%-%._~%+/]", 16) .. "[%w%-%._~%+/]*=*" },
  -- password=..., password: ..., "password": "...", also escaped inside JSON
  -- strings: a quoted value up to its closing quote (spaces included), on
  -- its line (a quote that the line does not close is no value: in
  -- log("password: " + x) it closes a string of the code), or up to the end
  -- of the text; an unquoted one up to a space or a separator
  { name = "password_quoted", hints = { "passw" }, nocase = true, keep = true,
    pattern = "(" .. PASSWORD .. "\\?\")[^\"\\\r\n]+%f[%z\"\\]" },
  { name = "password_single_quoted", hints = { "passw" }, nocase = true, keep = true,
    pattern = "(" .. PASSWORD .. "')[^'\r\n]+%f[%z']" },
  -- a quote its line does not close, then one word up to the line's end:
  -- a value cut off (grep -o 'PASSWORD="[^"]*'), not a string of code
  -- such as log("password: " + x) or log("password:"+x), where a space,
  -- an operator or a bracket follows
  { name = "password_unclosed", hints = { "passw" }, nocase = true, keep = true,
    pattern = "(" .. PASSWORD .. "\\?[\"'])[^%s&;,\"'}\\%(%)%[%]{+]+%f[%z\r\n]" },
  { name = "password", hints = { "passw" }, nocase = true, keep = true,
    pattern = "(" .. PASSWORD .. ")[^%s&;,\"'}\\]+" },
}
