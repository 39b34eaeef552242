package luabridge

import (
	"context"
	"log/slog"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/luabridge/lpattern"
)

// Limits bound what one Lua state may do (docs/design.md).
type Limits struct {
	// HookTimeout is the time budget of one hook call (default 100ms).
	HookTimeout time.Duration
	// LoadTimeout is the budget for running a plugin file (default 10s: a
	// load only registers, so the bound is there to stop a hang, and it must
	// not fail a sound plugin on a machine that is busy).
	LoadTimeout time.Duration
	// CallStackSize bounds nested calls (default 200).
	CallStackSize int
	// RegistryMaxSize bounds the value stack, in slots (default 1<<18).
	RegistryMaxSize int
	// StringMax bounds every string a plugin can build: string functions,
	// "..", table.concat, awaken.json.encode (default 16 MiB).
	StringMax int
	// PatternSteps bounds one call of find, match, gmatch or gsub (default
	// 1,000,000 steps): the deadline does not interrupt them.
	PatternSteps int64
	// LuaFileMax bounds one .lua file of a plugin directory and LuaDirMax
	// all of them together (defaults 2 MiB and 16 MiB): each load reads
	// every file require could load, so a generation runs only what it
	// loaded, and a load must not get slow because the directory is big.
	LuaFileMax int
	LuaDirMax  int
}

func (l Limits) withDefaults() Limits {
	if l.HookTimeout <= 0 {
		l.HookTimeout = 100 * time.Millisecond
	}
	if l.LoadTimeout <= 0 {
		l.LoadTimeout = 10 * time.Second
	}
	if l.CallStackSize <= 0 {
		l.CallStackSize = 200
	}
	if l.RegistryMaxSize <= 0 {
		l.RegistryMaxSize = 1 << 18
	}
	if l.StringMax <= 0 {
		l.StringMax = 16 << 20
	}
	if l.PatternSteps <= 0 {
		l.PatternSteps = 1_000_000
	}
	if l.LuaFileMax <= 0 {
		l.LuaFileMax = 2 << 20
	}
	if l.LuaDirMax <= 0 {
		l.LuaDirMax = 16 << 20
	}
	return l
}

// deadline is a context that an instance owns for its whole life: each call
// arms its timer, so no context is allocated per call. Once it fires it
// stays done, and the instance is discarded.
type deadline struct {
	once  sync.Once
	done  chan struct{}
	mu    sync.Mutex
	err   error
	timer *time.Timer
}

var _ context.Context = (*deadline)(nil)

func newDeadline() *deadline {
	d := &deadline{done: make(chan struct{})}
	d.timer = time.AfterFunc(time.Hour, func() { d.fire(errHookBudget) })
	d.timer.Stop()
	return d
}

func (d *deadline) fire(err error) {
	d.once.Do(func() {
		d.mu.Lock()
		d.err = err
		d.mu.Unlock()
		close(d.done)
	})
}

func (d *deadline) Deadline() (time.Time, bool) { return time.Time{}, false }
func (d *deadline) Done() <-chan struct{}       { return d.done }
func (d *deadline) Value(any) any               { return nil }
func (d *deadline) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// fired reports whether the deadline has fired.
func (d *deadline) fired() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// arm starts the budget; disarm stops it and reports whether it fired.
func (d *deadline) arm(budget time.Duration) { d.timer.Reset(budget) }
func (d *deadline) disarm() bool {
	d.timer.Stop()
	return d.fired()
}

// The base functions a plugin may use; everything else of gopher-lua's base
// library (dofile, loadfile, load, loadstring, getfenv, setfenv, module,
// require, collectgarbage, newproxy, print, rawset) is removed or replaced.
var baseAllowed = map[string]bool{
	"assert": true, "error": true, "getmetatable": true, "ipairs": true, "next": true,
	"pairs": true, "pcall": true, "rawequal": true, "rawget": true, "select": true,
	"setmetatable": true, "tonumber": true, "tostring": true, "type": true,
	"unpack": true, "xpcall": true, "_VERSION": true,
}

// newState makes a Lua state with the allowed libraries and the limits.
func newState(lim Limits) *lua.LState {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       lim.CallStackSize,
		RegistrySize:        256,
		RegistryMaxSize:     lim.RegistryMaxSize,
		RegistryGrowStep:    128,
		MinimizeStackMemory: true,
	})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	var drop []string
	g.ForEach(func(k, _ lua.LValue) {
		name := k.String()
		if name == lua.TabLibName || name == lua.StringLibName || name == lua.MathLibName {
			return
		}
		if !baseAllowed[name] {
			drop = append(drop, name)
		}
	})
	for _, name := range drop {
		g.RawSetString(name, lua.LNil)
	}
	// package.loaded of the base library registration is not reachable
	// without require; drop the registry's copy of _G as well.
	if loaded, ok := L.Get(lua.RegistryIndex).(*lua.LTable).RawGetString("_LOADED").(*lua.LTable); ok {
		loaded.RawSetString("_G", lua.LNil)
	}

	math := g.RawGetString(lua.MathLibName).(*lua.LTable)
	math.RawSetString("random", lua.LNil)
	math.RawSetString("randomseed", lua.LNil)

	openBounded(L, lim)
	steps := lim.PatternSteps
	lpattern.OpenWith(L, lpattern.Options{Budget: func() int64 { return steps },
		StepsPerByte: lpattern.DefaultStepsPerByte, MaxResult: lim.StringMax})

	// gopher-lua makes the string library its own metatable for strings
	// (string.__index == string), so ("").__index was the library table
	// itself, writable from any hook, and a change stayed on the pooled
	// state for the next thread's run. Strings get a metatable of their
	// own, hidden by __metatable; the library no longer refers to itself.
	str := g.RawGetString(lua.StringLibName).(*lua.LTable)
	str.RawSetString("__index", lua.LNil)
	smt := L.CreateTable(0, 2)
	smt.RawSetString("__index", str)
	smt.RawSetString("__metatable", lua.LString("protected"))
	L.SetMetatable(lua.LString(""), smt)
	return L
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

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

// openGlobals builds the globals a chunk sees: the libraries behind
// read-only views, and the sandbox's require, print and rawset.
func (inst *instance) openGlobals() {
	L := inst.L
	g := L.G.Global
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
		k := L.CheckAny(2)
		// The checks of t[k] = v (setIndex): a key far past the end of a
		// list would fill the gap one slot at a time, and a nil or NaN key
		// would hide the value from pairs and next.
		checkSparse(L, t, k)
		L.RawSet(t, k, L.CheckAny(3))
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
}
