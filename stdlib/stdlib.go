// Package stdlib holds the Lua plugins and modules shipped with awaken-lua,
// and the LuaLS definitions of the awaken module (types/). Its plugins load
// only when awaken.toml names them.
package stdlib

import "embed"

// FS is the stdlib tree: plugins (name.lua, name/init.lua), their modules,
// tests (*_test.lua) and types/.
//
//go:embed *
var FS embed.FS
