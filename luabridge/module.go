package luabridge

import (
	"context"
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// Module is a Lua module loaded on its own, for calling its functions from
// Go (fuzz targets of Lua parsers use it). It is not safe for concurrent use.
type Module struct {
	inst  *instance
	table *lua.LTable
}

// OpenModule loads module name (a dotted name, as for require) from src in
// a sandboxed state bounded by lim (its zero fields are the defaults: a
// call's budget is lim.HookTimeout).
func OpenModule(src Source, name string, lim Limits) (*Module, error) {
	lim = lim.withDefaults()
	g := &Generation{limits: lim, sources: []Source{src}, protos: map[string]*lua.FunctionProto{}}
	g.log = discardLog()
	p := &luaPlugin{gen: g, id: "module", root: src, timeout: lim.HookTimeout, validateFn: -1, prepareFn: -1}
	inst := p.bareInstance()
	L := inst.L
	inst.loading = true
	L.Push(L.NewFunction(inst.require))
	L.Push(lua.LString(name))
	fired, abandoned, err := inst.callBounded(context.Background(), lim.LoadTimeout, 1, 1)
	if abandoned {
		return nil, fmt.Errorf("loading %s took too long", name)
	}
	inst.loading = false
	if fired || err != nil {
		L.Close()
		if fired {
			return nil, fmt.Errorf("loading %s took too long", name)
		}
		return nil, luaError(err, "")
	}
	t, ok := L.Get(-1).(*lua.LTable)
	L.Pop(1)
	if !ok {
		L.Close()
		return nil, fmt.Errorf("module %s does not return a table", name)
	}
	return &Module{inst: inst, table: t}, nil
}

// Call calls fn(args...) with canonical Go values and returns its results
// as canonical Go values. A Lua error is returned as an error; a call that
// runs past the hook budget fails with hook_timeout and closes the module.
func (m *Module) Call(fn string, args ...any) ([]any, error) {
	inst := m.inst
	L := inst.L
	if inst.dl.fired() {
		return nil, fmt.Errorf("the module is closed after a timeout")
	}
	f, ok := m.table.RawGetString(fn).(*lua.LFunction)
	if !ok {
		return nil, fmt.Errorf("the module has no function %q", fn)
	}
	top := L.GetTop()
	L.Push(f)
	for _, a := range args {
		L.Push(toLua(L, inst.null, a))
	}
	inst.dl.arm(inst.p.timeout)
	err := L.PCall(len(args), lua.MultRet, nil)
	if inst.dl.disarm() {
		L.SetTop(top)
		return nil, fmt.Errorf("hook_timeout: %s ran longer than %s", fn, inst.p.timeout)
	}
	if err != nil {
		L.SetTop(top)
		return nil, luaError(err, "")
	}
	var out []any
	for i := top + 1; i <= L.GetTop(); i++ {
		v, err := fromLua(L.Get(i), inst.null)
		if err != nil {
			v = L.Get(i).String()
		}
		out = append(out, v)
	}
	L.SetTop(top)
	return out, nil
}

// Close releases the module's state.
func (m *Module) Close() { m.inst.close() }
