package luabridge

import (
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// A read-only view is an empty table whose metatable reads through to the
// table it shows and refuses writes. Lua 5.1 has no way to freeze a table
// (a write to an existing key never reaches __newindex), so every table a
// plugin must not change (the libraries, the awaken module, ctx.config) is
// handed out as a view, and the sandbox's pairs, ipairs, next, unpack,
// rawget and table functions see through views: reading works as on a
// plain table, writing raises with the plugin's file:line.
//
// The view's metatable is unreachable from Lua (its __metatable field hides
// it), so the table it shows cannot be reached either.

// viewKey is the metatable field that holds the table a view shows.
const viewKey = "__awaken_view"

// viewName is the metatable field that names the view in messages.
const viewName = "__awaken_name"

// newView returns a read-only view of t named what ("string",
// "ctx.config.deny").
func newView(L *lua.LState, t *lua.LTable, what string) *lua.LTable {
	p := L.CreateTable(0, 0)
	mt := L.CreateTable(0, 6)
	newIndex, length := viewFuncs(L)
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", newIndex)
	mt.RawSetString("__len", length)
	mt.RawSetString("__metatable", lua.LString("protected"))
	mt.RawSetString(viewKey, t)
	mt.RawSetString(viewName, lua.LString(what))
	p.Metatable = mt
	return p
}

// viewFuncsKey is the registry field that holds the __newindex and __len
// functions every view of a state shares.
const viewFuncsKey = "awaken.view"

func viewFuncs(L *lua.LState) (newIndex, length *lua.LFunction) {
	reg := L.Get(lua.RegistryIndex).(*lua.LTable)
	fs, ok := reg.RawGetString(viewFuncsKey).(*lua.LTable)
	if !ok {
		fs = L.CreateTable(2, 0)
		fs.RawSetInt(1, L.NewFunction(viewNewIndex))
		fs.RawSetInt(2, L.NewFunction(viewLen))
		reg.RawSetString(viewFuncsKey, fs)
	}
	return fs.RawGetInt(1).(*lua.LFunction), fs.RawGetInt(2).(*lua.LFunction)
}

// viewed returns the table t shows if t is a read-only view, else t.
func viewed(t *lua.LTable) *lua.LTable {
	if t.Metatable == lua.LNil {
		return t
	}
	if mt, ok := t.Metatable.(*lua.LTable); ok {
		if b, ok := mt.RawGetString(viewKey).(*lua.LTable); ok {
			return b
		}
	}
	return t
}

// viewOf reports the name of the view t, or "" if t is a plain table.
func viewOf(t *lua.LTable) string {
	if t.Metatable == lua.LNil {
		return ""
	}
	if mt, ok := t.Metatable.(*lua.LTable); ok {
		if mt.RawGetString(viewKey) != lua.LNil {
			return lua.LVAsString(mt.RawGetString(viewName))
		}
	}
	return ""
}

// checkWritable raises if t is a read-only view: fn names the function
// that would have written ("table.insert").
func checkWritable(L *lua.LState, t *lua.LTable, fn string) {
	if what := viewOf(t); what != "" {
		L.RaiseError("%s: %s is read-only", fn, what)
	}
}

func viewNewIndex(L *lua.LState) int {
	what := viewOf(L.CheckTable(1))
	k := L.Get(2)
	if s, ok := k.(lua.LString); ok {
		L.RaiseError("%s is read-only: cannot set %q", what, truncate(string(s), 80))
	}
	L.RaiseError("%s is read-only: cannot set [%s]", what, truncate(k.String(), 80))
	return 0
}

func viewLen(L *lua.LState) int {
	L.Push(lua.LNumber(viewed(L.CheckTable(1)).Len()))
	return 1
}

// deepView converts a canonical value into Lua with every table behind a
// read-only view (ctx.config): a hook can read it like plain tables but
// cannot change what the next call on this state sees.
func deepView(L *lua.LState, null lua.LValue, v any, what string) lua.LValue {
	switch x := v.(type) {
	case []any:
		t := L.CreateTable(len(x), 0)
		for i, e := range x {
			t.Append(deepView(L, null, e, what+"["+itoa(i+1)+"]"))
		}
		return newView(L, t, what)
	case map[string]any:
		t := L.CreateTable(0, len(x))
		for k, e := range x {
			t.RawSetString(k, deepView(L, null, e, what+"."+k))
		}
		return newView(L, t, what)
	case []string:
		t := L.CreateTable(len(x), 0)
		for _, e := range x {
			t.Append(lua.LString(e))
		}
		return newView(L, t, what)
	case shared:
		return x.toLua(L)
	}
	return toLua(L, null, v)
}

// truncate shortens s to at most n bytes for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func itoa(i int) string { return strconv.Itoa(i) }
