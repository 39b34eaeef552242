package luabridge

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// sandboxed names what plugins cannot use, and why.
var sandboxed = map[string]string{
	"os":             "plugins cannot run commands, read the environment or the clock; use ctx:now() for time",
	"io":             "plugins cannot read or write files; give the agent a tool for that",
	"debug":          "it would let a plugin escape the sandbox",
	"package":        "use require for modules in the plugin directory or stdlib/",
	"dofile":         "use require for modules in the plugin directory or stdlib/",
	"loadfile":       "use require for modules in the plugin directory or stdlib/",
	"load":           "plugins cannot compile code at run time",
	"loadstring":     "plugins cannot compile code at run time",
	"getfenv":        "environments are fixed in the sandbox",
	"setfenv":        "environments are fixed in the sandbox",
	"module":         "return a table from the module file instead",
	"collectgarbage": "the runtime manages memory",
	"coroutine":      "hooks run to completion",
}

// setupAPI builds the state's globals and the awaken module.
func (inst *instance) setupAPI() {
	L := inst.L
	g := L.G.Global
	inst.null = L.NewUserData()
	nullMeta := L.CreateTable(0, 2)
	nullMeta.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LString("awaken.null")); return 1 }))
	nullMeta.RawSetString("__metatable", lua.LString("protected"))
	inst.null.Metatable = nullMeta

	// The globals a chunk sees: libraries behind read-only proxies, and the
	// replaced require, print and rawset.
	globals := L.CreateTable(0, 24)
	g.ForEach(func(k, v lua.LValue) {
		if t, ok := v.(*lua.LTable); ok {
			v = newView(L, t, k.String())
		}
		globals.RawSet(k, v)
	})
	globals.RawSetString(concatName, L.NewFunction(concat(inst.p.gen.limits.StringMax)))
	globals.RawSetString(setIndexName, L.NewFunction(setIndex))
	globals.RawSetString(tableName, L.NewFunction(newTable))
	globals.RawSetString("require", L.NewFunction(inst.require))
	globals.RawSetString("print", L.NewFunction(inst.print))
	globals.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		if mt, ok := t.Metatable.(*lua.LTable); ok && mt.RawGetString("__metatable") != lua.LNil {
			L.RaiseError("rawset: this table is read-only")
		}
		t.RawSet(L.CheckAny(2), L.CheckAny(3))
		L.Push(t)
		return 1
	}))
	// Names the sandbox leaves out fail with a message that says why,
	// rather than "attempt to index a nil value".
	gmt := L.CreateTable(0, 1)
	gmt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		if name, ok := L.Get(2).(lua.LString); ok {
			if why, forbidden := sandboxed[string(name)]; forbidden {
				L.RaiseError("the sandbox has no %s: %s", string(name), why)
			}
		}
		return 0
	}))
	globals.Metatable = gmt
	inst.globals = globals

	inst.handleMeta = L.CreateTable(0, 3)
	inst.handleMeta.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		h := L.CheckUserData(1).Value.(*keyHandle)
		if L.CheckString(2) == "name" {
			L.Push(lua.LString(h.name))
			return 1
		}
		L.Push(lua.LNil)
		return 1
	}))
	inst.handleMeta.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString("key " + L.CheckUserData(1).Value.(*keyHandle).name))
		return 1
	}))
	inst.handleMeta.RawSetString("__metatable", lua.LString("protected"))

	inst.decisionMeta = L.CreateTable(0, 2)
	inst.decisionMeta.RawSetString("__index", L.NewFunction(inst.decisionIndex))
	inst.decisionMeta.RawSetString("__metatable", lua.LString("protected"))

	inst.setupCtx()
	inst.setupPluginObject()

	m := L.CreateTable(0, 12)
	fns := map[string]lua.LGFunction{
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
	for name, fn := range fns {
		m.RawSetString(name, L.NewFunction(fn))
	}
	m.RawSetString("null", inst.null)
	jsonT := L.CreateTable(0, 2)
	jsonT.RawSetString("encode", L.NewFunction(inst.jsonEncode))
	jsonT.RawSetString("decode", L.NewFunction(inst.jsonDecode))
	m.RawSetString("json", newView(L, jsonT, "awaken.json"))
	logT := L.CreateTable(0, 4)
	for _, lv := range []struct {
		name  string
		level slog.Level
	}{{"debug", slog.LevelDebug}, {"info", slog.LevelInfo}, {"warn", slog.LevelWarn}, {"error", slog.LevelError}} {
		level := lv.level
		logT.RawSetString(lv.name, L.NewFunction(func(L *lua.LState) int { return inst.log(L, level) }))
	}
	m.RawSetString("log", newView(L, logT, "awaken.log"))
	inst.awaken = newView(L, m, "awaken")
}

// logMax bounds what one print or awaken.log call writes: a longer message
// is cut (saying how many bytes were left out), and fields past the bound
// are replaced by a note.
const logMax = 64 << 10

// logFieldsMax bounds the fields of one awaken.log call.
const logFieldsMax = 64

// clip cuts s to at most n bytes (at a character boundary) and says how
// much was left out.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "... (" + strconv.Itoa(len(s)-n) + " more bytes)"
}

func (inst *instance) print(L *lua.LState) int {
	top := L.GetTop()
	var b strings.Builder
	for i := 1; i <= top; i++ {
		if i > 1 {
			b.WriteByte('\t')
		}
		s := L.ToStringMeta(L.Get(i)).String()
		if room := logMax - b.Len(); len(s) > room {
			b.WriteString(clip(s, room))
			if i < top {
				b.WriteString(" (and " + strconv.Itoa(top-i) + " more values)")
			}
			break
		}
		b.WriteString(s)
	}
	inst.p.gen.log.Info(b.String(), "plugin", inst.p.id, "source", "print")
	return 0
}

func (inst *instance) log(L *lua.LState, level slog.Level) int {
	msg := clip(L.CheckString(1), logMax)
	attrs := []any{"plugin", inst.p.id}
	if t, ok := L.Get(2).(*lua.LTable); ok {
		t = viewed(t)
		var keys []string
		omitted := 0
		m := meter{L: L}
		for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
			m.add(1)
			s, ok := k.(lua.LString)
			if !ok {
				continue
			}
			if len(keys) == logFieldsMax {
				omitted++
				continue
			}
			keys = append(keys, string(s))
		}
		sort.Strings(keys)
		room := logMax - len(msg)
		for _, k := range keys {
			c := converter{null: inst.null, maxEntries: 1024, maxBytes: max(room, 0), L: L}
			v, err := c.run(t.RawGetString(k))
			if err != nil {
				v = "(not logged: " + err.Error() + ")"
			}
			room -= c.bytes
			attrs = append(attrs, clip(k, 256), v)
		}
		if omitted > 0 {
			attrs = append(attrs, "fields_omitted", omitted)
		}
	}
	if inst.call != nil && inst.call.in != nil {
		attrs = append(attrs, "run_id", inst.call.in.Run.ID)
	}
	inst.p.gen.log.Log(context.Background(), level, msg, attrs...)
	return 0
}

func (inst *instance) jsonEncode(L *lua.LState) int {
	v, err := fromLuaIn(L, L.CheckAny(1), inst.null)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString("json: " + err.Error()))
		return 2
	}
	e := jsonEncoder{max: inst.p.gen.limits.StringMax, L: L}
	if err := e.encode(v); err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString("json: " + err.Error()))
		return 2
	}
	L.Push(lua.LString(e.buf))
	return 1
}

func (inst *instance) jsonDecode(L *lua.LState) int {
	d := jsonDecoder{L: L, null: inst.null, s: L.CheckString(1), max: maxEntries}
	v, err := d.decode()
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString("json: " + err.Error()))
		return 2
	}
	L.Push(v)
	return 1
}

func (inst *instance) glob(L *lua.LState) int {
	g, err := inst.p.gen.globs.compile(L.CheckString(1))
	if err != nil {
		L.RaiseError("awaken.glob: %v", err)
	}
	L.Push(lua.LBool(g.match(L, L.CheckString(2))))
	return 1
}
