package luabridge

import (
	"log/slog"

	lua "github.com/yuin/gopher-lua"
)

// The awaken module, one table per library as gopher-lua's own libraries
// are built (a map of functions, set with L.SetFuncs). The functions are
// methods of the instance, so they reach the state's plugin and call.

// awakenFuncs are the functions of the awaken module.
func (inst *instance) awakenFuncs() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"plugin":     inst.newPlugin,
		"block":      inst.block,
		"suspend":    inst.suspend,
		"set_result": inst.setResult,
		"rewrite":    inst.rewrite,
		"success":    inst.success,
		"error":      inst.errorResult,
		"pending":    inst.pending,
		"glob":       inst.glob,
	}
}

// jsonFuncs are the functions of awaken.json.
func (inst *instance) jsonFuncs() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"encode": inst.jsonEncode,
		"decode": inst.jsonDecode,
	}
}

// logFuncs are the functions of awaken.log.
func (inst *instance) logFuncs() map[string]lua.LGFunction {
	at := func(level slog.Level) lua.LGFunction { return func(L *lua.LState) int { return inst.log(L, level) } }
	return map[string]lua.LGFunction{
		"debug": at(slog.LevelDebug),
		"info":  at(slog.LevelInfo),
		"warn":  at(slog.LevelWarn),
		"error": at(slog.LevelError),
	}
}

// regexFuncs are the functions of awaken.regex.
func (inst *instance) regexFuncs() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"match": inst.regexMatch,
		"find":  inst.regexFind,
	}
}

// library makes one library table, read-only.
func (inst *instance) library(name string, funcs map[string]lua.LGFunction) *lua.LTable {
	L := inst.L
	return newView(L, L.SetFuncs(L.CreateTable(0, len(funcs)), funcs), name)
}

// setupAPI builds the state's globals, the awaken module and the
// metatables of the values the runtime hands to Lua.
func (inst *instance) setupAPI() {
	L := inst.L
	inst.null = L.NewUserData()
	nullMeta := L.CreateTable(0, 2)
	nullMeta.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LString("awaken.null")); return 1 }))
	nullMeta.RawSetString("__metatable", lua.LString("protected"))
	inst.null.Metatable = nullMeta

	inst.openGlobals()
	inst.openDecisions()
	inst.openCtx()
	inst.openPlugin()

	funcs := inst.awakenFuncs()
	m := L.SetFuncs(L.CreateTable(0, len(funcs)+4), funcs)
	m.RawSetString("null", inst.null)
	// awaken.json, awaken.log, awaken.regex, awaken.shell and awaken.rules
	// are made on first use: a state that never uses one does not carry it.
	libs := L.CreateTable(0, 1)
	libs.RawSetString("__index", L.NewFunction(inst.openLibrary))
	m.Metatable = libs
	inst.awaken = newView(L, m, "awaken")
}

// openLibrary makes a library of the awaken module on its first use.
func (inst *instance) openLibrary(L *lua.LState) int {
	m := L.CheckTable(1)
	name, _ := L.Get(2).(lua.LString)
	var funcs map[string]lua.LGFunction
	switch name {
	case "json":
		funcs = inst.jsonFuncs()
	case "log":
		funcs = inst.logFuncs()
	case "regex":
		funcs = inst.regexFuncs()
	case "shell":
		funcs = shellFuncs()
	case "rules":
		funcs = rulesFuncs()
	default:
		L.Push(lua.LNil)
		return 1
	}
	lib := inst.library("awaken."+string(name), funcs)
	m.RawSetString(string(name), lib)
	L.Push(lib)
	return 1
}
