package luabridge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
)

// errHookBudget is what an instance's deadline fires with when a call runs
// past its budget (as opposed to the caller's context ending).
var errHookBudget = errors.New("hook budget exceeded")

// instance is one Lua state with one plugin loaded: the unit a pool holds.
// It runs one call at a time.
type instance struct {
	L  *lua.LState
	p  *luaPlugin
	dl *deadline

	// fns holds the plugin's registered functions by registration index.
	fns []lua.LValue

	null         *lua.LUserData
	ctxMeta      *lua.LTable
	callMeta     *lua.LTable
	resultMeta   *lua.LTable
	requestMeta  *lua.LTable
	pendingReq   *model.Request // the request a transform's lazy table reads
	decisionMeta *lua.LTable
	handleMeta   *lua.LTable
	pluginMeta   *lua.LTable
	globals      *lua.LTable // read-only view of the libraries
	awaken       *lua.LTable
	methods      map[string]*lua.LFunction

	call    *hookCall
	conf    configCache
	testing bool // a test file's state: globals stay writable
	modules map[string]lua.LValue

	// While the plugin file runs: it registers into reg (the plugin's own
	// registrar in the first state, a throwaway one in the others), and
	// what it registers is recorded in regs to compare the states.
	loading  bool
	reg      *plugin.Registrar
	regs     []registration
	handles  []*keyHandle
	pluginUD *lua.LUserData
	// What awaken.plugin{...} set: the budget of a call, and the indexes
	// of validate and prepare (-1 for none).
	timeout    time.Duration
	validateFn int
	prepareFn  int
}

// newInstance makes a state, runs the plugin's file in it and collects the
// registered functions; the registrations go to reg.
func (p *luaPlugin) newInstance(ctx context.Context, reg *plugin.Registrar) (inst *instance, err error) {
	lim := p.gen.limits
	inst = p.bareInstance()
	inst.reg = reg
	L := inst.L
	abandoned := false
	defer func() {
		if err != nil && !abandoned {
			L.Close()
		}
	}()

	fn := L.NewFunctionFromProto(p.proto)
	fn.Env = inst.newEnv()
	inst.loading = true
	L.Push(fn)
	fired, abandoned, callErr := inst.callBounded(ctx, lim.LoadTimeout, 0, 1)
	if abandoned {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("loading %s: %w", p.file, ctx.Err())
		}
		return nil, &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: p.file},
			Msg: fmt.Sprintf("loading took longer than %s and a function it called has not returned; a plugin file should only register hooks", lim.LoadTimeout)}
	}
	inst.loading = false
	if fired && ctx.Err() != nil {
		return nil, fmt.Errorf("loading %s: %w", p.file, ctx.Err())
	}
	if fired {
		// The line the load was stopped at, as a hook's timeout names it:
		// where the loop is.
		pos := errs.Pos{File: p.file}
		if callErr != nil {
			if at := luaError(callErr, errs.PluginLoadFailed).Pos; at.IsValid() {
				pos = at
			}
		}
		return nil, &errs.Error{Code: errs.PluginLoadFailed, Pos: pos,
			Msg: fmt.Sprintf("loading took longer than %s; a plugin file should only register hooks (an endless loop at load time?)", lim.LoadTimeout)}
	}
	if callErr != nil {
		e := luaError(callErr, errs.PluginLoadFailed)
		switch e.Code {
		case errs.PluginLoadFailed, errs.KeyAlreadyRegistered, errs.HandlerAlreadyRegistered, errs.ToolAlreadyRegistered, errs.ConfigInvalid:
		default:
			e.Code = errs.PluginLoadFailed
		}
		if !e.Pos.IsValid() {
			e.Pos = errs.Pos{File: p.file}
		}
		return nil, e
	}
	ret := L.Get(-1)
	L.Pop(1)
	if inst.pluginUD == nil || ret != lua.LValue(inst.pluginUD) {
		return nil, &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: p.file},
			Msg: "the file must return its plugin: create it with awaken.plugin{...} and end the file with `return p`"}
	}
	return inst, nil
}

// bareInstance makes a sandboxed state with the awaken module for the
// plugin, before any file runs in it.
func (p *luaPlugin) bareInstance() *instance {
	lim := p.gen.limits
	inst := &instance{L: newState(lim), p: p, dl: newDeadline(), modules: map[string]lua.LValue{},
		timeout: lim.HookTimeout, validateFn: -1, prepareFn: -1}
	inst.setupAPI()
	inst.L.SetContext(inst.dl)
	return inst
}

// adopt takes the plugin's registrations from its first state.
func (p *luaPlugin) adopt(inst *instance) {
	p.id, p.timeout = inst.reg.ID(), inst.timeout
	p.validateFn, p.prepareFn = inst.validateFn, inst.prepareFn
	p.regs = inst.regs
	p.keys = make(map[string]*state.Key, len(inst.handles))
	for _, h := range inst.handles {
		p.keys[h.name] = h.key
	}
	inst.loaded()
}

// spawn makes one more state of a loaded plugin: its file runs again,
// registering into a throwaway registrar, and must register what the first
// run did; its key handles then point at the generation's keys.
func (p *luaPlugin) spawn(ctx context.Context) (*instance, error) {
	inst, err := p.newInstance(ctx, plugin.NewRegistrar(p.id, errs.Pos{File: p.file}))
	if err != nil {
		return nil, err
	}
	if err := p.sameRegistrations(inst.regs); err != nil {
		inst.close()
		return nil, err
	}
	for _, h := range inst.handles {
		h.key = p.keys[h.name]
	}
	inst.loaded()
	return inst, nil
}

// loaded drops what only the load needed.
func (inst *instance) loaded() {
	inst.reg, inst.regs, inst.handles = nil, nil, nil
}

// loadGrace is how long past its budget a load may take to come back
// before its caller stops waiting for it.
const loadGrace = 250 * time.Millisecond

// callBounded calls the function on top of the stack (below its nargs
// arguments) with the budget armed, as a load does: in a goroutine of its
// own, so that a Go function that neither returns nor looks at the
// deadline (a host's preloaded module, a bug) cannot hold check, the
// watcher or a reload. If the call has not come back loadGrace after its
// budget (or after ctx ended), the state is abandoned to the goroutine,
// which closes it if the call ever returns; the caller must not touch the
// instance again.
func (inst *instance) callBounded(ctx context.Context, budget time.Duration, nargs, nret int) (fired, abandoned bool, callErr error) {
	L := inst.L
	done := make(chan error, 1)
	stop := inst.watch(ctx)
	inst.dl.arm(budget)
	go func() { done <- L.PCall(nargs, nret, nil) }()
	hard := time.NewTimer(budget + loadGrace)
	defer hard.Stop()
	ctxDone := ctx.Done()
	for {
		select {
		case callErr = <-done:
			fired = inst.dl.disarm()
			if stop != nil {
				stop()
			}
			return fired, false, callErr
		case <-ctxDone:
			// The deadline has fired (watch); give the call its grace.
			ctxDone = nil
			hard.Reset(loadGrace)
			continue
		case <-hard.C:
		}
		break
	}
	inst.dl.fire(errHookBudget)
	if stop != nil {
		stop()
	}
	go func() {
		<-done
		L.Close()
	}()
	return true, true, nil
}

func (inst *instance) close() { inst.L.Close() }

// newEnv makes the global environment of one chunk: reads fall through to
// the libraries; writes land in the chunk's own table while the plugin
// loads and raise afterwards, so a pooled state never carries a global
// from one call to the next.
func (inst *instance) newEnv() *lua.LTable {
	L := inst.L
	backing := L.CreateTable(0, 4)
	bmt := L.CreateTable(0, 1)
	bmt.RawSetString("__index", inst.globals)
	backing.Metatable = bmt
	env := L.CreateTable(0, 0)
	mt := L.CreateTable(0, 3)
	mt.RawSetString("__index", backing)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		name := L.Get(2)
		if !inst.loading && !inst.testing {
			L.RaiseError("globals are read-only once the plugin has loaded: cannot set %q at call time; use a local, or a key (p:key) for state", name.String())
		}
		backing.RawSet(name, L.Get(3))
		return 0
	}))
	mt.RawSetString("__metatable", lua.LString("protected"))
	env.Metatable = mt
	backing.RawSetString("_G", env)
	return env
}

// require loads modules from the plugin directory and stdlib/ only. Each
// module runs once per state in an environment of its own.
func (inst *instance) require(L *lua.LState) int {
	name := L.CheckString(1)
	if v, ok := inst.modules[name]; ok {
		if v == lua.LFalse {
			L.RaiseError("require %q: the module requires itself (a cycle)", name)
		}
		L.Push(v)
		return 1
	}
	switch name {
	case "awaken":
		L.Push(inst.awaken)
		return 1
	}
	if pre, ok := inst.p.gen.preload[name]; ok {
		v := pre(L, inst)
		inst.modules[name] = v
		L.Push(v)
		return 1
	}
	proto, err := inst.p.gen.module(name, inst.p.root)
	if err != nil {
		L.RaiseError("%v", err)
	}
	inst.modules[name] = lua.LFalse
	fn := L.NewFunctionFromProto(proto)
	fn.Env = inst.newEnv()
	L.Push(fn)
	L.Push(lua.LString(name))
	L.Call(1, 1)
	v := L.Get(-1)
	L.Pop(1)
	if v == lua.LNil {
		v = lua.LTrue
	}
	inst.modules[name] = v
	L.Push(v)
	return 1
}

// modulePaths lists where a module name may live, as slash paths.
func modulePaths(name string) ([]string, error) {
	if name == "" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") ||
		strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("require %q: module names are dotted names such as \"rules\" or \"permission.parse\", found in the plugin directory or stdlib/", name)
	}
	p := strings.ReplaceAll(name, ".", "/")
	return []string{p + ".lua", path.Join(p, "init.lua")}, nil
}

func readFile(fsys fs.FS, name string) ([]byte, bool) {
	if fsys == nil {
		return nil, false
	}
	b, err := fs.ReadFile(fsys, name)
	return b, err == nil
}

// keyFor resolves a key argument (a handle or a name) for ctx:get/update.
func (inst *instance) keyFor(L *lua.LState, n int) (string, *state.Key) {
	switch v := L.Get(n).(type) {
	case *lua.LUserData:
		if h, ok := v.Value.(*keyHandle); ok {
			return h.name, h.key
		}
	case lua.LString:
		return string(v), nil
	}
	L.ArgError(n, "a key handle (from p:key) or a key name expected, got "+L.Get(n).Type().String())
	return "", nil
}

// watch makes ctx's end fire the instance's deadline too; the returned
// function stops that (nil when ctx never ends).
func (inst *instance) watch(ctx context.Context) func() bool {
	if ctx.Done() == nil {
		return nil
	}
	return context.AfterFunc(ctx, func() { inst.dl.fire(ctx.Err()) })
}
