// Package stdlib holds the Lua plugins and modules shipped with awaken-lua,
// and the LuaLS definitions of the awaken module (types/). Its plugins load
// only when awaken.toml names them.
package stdlib

import "embed"

// FS is what the binary ships of the stdlib tree: the plugins (name/init.lua),
// their modules and types/. Tests (*_test.lua), test fixtures
// (fixture_*.lua) and the READMEs stay out; go test reads them from the
// source tree (stdlib_test.go checks that nothing else is left out).
//
//go:embed audit/init.lua audit/mask.lua
//go:embed budget/init.lua
//go:embed deferred_tools/init.lua deferred_tools/catalog.lua
//go:embed permission/init.lua permission/rules.lua
//go:embed redact/init.lua redact/patterns.lua redact/scrub.lua
//go:embed reminder/init.lua reminder/match.lua
//go:embed verify/init.lua
//go:embed types/*.lua
var FS embed.FS
