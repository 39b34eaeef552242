package luabridge

import lua "github.com/yuin/gopher-lua"

// Preload makes require(name) return what mk builds, in every state of the
// generations l loads: the external tests add modules written in Go.
func Preload(l *Loader, name string, mk func(L *lua.LState) lua.LValue) {
	if l.preload == nil {
		l.preload = map[string]preloadFunc{}
	}
	l.preload[name] = func(L *lua.LState, _ *instance) lua.LValue { return mk(L) }
}
