package luabridge

import (
	"errors"
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
)

// Registration. The plugin file runs once in every Lua state of the plugin
// (each state needs its own copies of the functions), and every run
// registers into a registrar of its own with the same checks. The first
// state's registrar becomes the plugin's part of the generation; the
// others' are thrown away once their registrations (recorded in order as
// registrations) are found equal to the first's.

// registration is one thing the plugin file registered: what (with the
// parts of its spec that a state can get wrong), where, and the index of
// its function.
type registration struct {
	what string
	line int
	fn   int
}

// keyHandle is what p:key returns: hooks read and write through it without
// a name lookup.
type keyHandle struct {
	name string
	key  *state.Key
}

// pluginFuncs are the methods of the plugin object (p:key, p:on, ...).
func (inst *instance) pluginFuncs() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"key":              inst.regKey,
		"on":               inst.regOn,
		"tool_gate":        inst.regGate,
		"action":           inst.regAction,
		"effect":           inst.regEffect,
		"tool":             inst.regTool,
		"transform":        inst.regTransform,
		"result_transform": inst.regResultTransform,
	}
}

// openPlugin makes the metatables of the plugin object and of key handles.
func (inst *instance) openPlugin() {
	L := inst.L
	funcs := inst.pluginFuncs()
	idx := L.SetFuncs(L.CreateTable(0, len(funcs)), funcs)
	inst.pluginMeta = L.CreateTable(0, 3)
	inst.pluginMeta.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		k := L.CheckString(2)
		if k == "id" {
			L.Push(lua.LString(inst.pluginID()))
			return 1
		}
		m := idx.RawGetString(k)
		if m == lua.LNil {
			// Without this, p:tools{} fails as "attempt to call a
			// non-function object", which names nothing to fix.
			names := sortedLuaKeys(idx)
			L.RaiseError("the plugin object has no field %q%s; it has id and the methods %s",
				k, errs.DidYouMean(k, names), strings.Join(names, ", "))
		}
		L.Push(m)
		return 1
	}))
	inst.pluginMeta.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("the plugin object is read-only; register with p:on, p:key, p:tool_gate, ...")
		return 0
	}))
	inst.pluginMeta.RawSetString("__metatable", lua.LString("protected"))

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
}

// pluginID is the plugin's id: while the file runs, as awaken.plugin{id}
// may have set it.
func (inst *instance) pluginID() string {
	if inst.reg != nil {
		return inst.reg.ID()
	}
	return inst.p.id
}

var pluginFields = map[string]bool{"id": true, "description": true, "config": true, "validate": true,
	"prepare": true, "hook_timeout": true, "priority": true}

func pluginFieldNames() []string {
	return []string{"id", "description", "config", "validate", "prepare", "hook_timeout", "priority"}
}

func (inst *instance) checkLoading(L *lua.LState, what string) {
	if !inst.loading {
		raise(L, errs.PluginLoadFailed, "%s after the plugin has loaded: register when the plugin file runs, not from a hook", what)
	}
}

func (inst *instance) where(L *lua.LState) errs.Pos {
	return parseWhere(L.Where(1))
}

// record notes a registration for the comparison between states.
func (inst *instance) record(L *lua.LState, fn int, format string, args ...any) {
	inst.regs = append(inst.regs, registration{what: fmt.Sprintf(format, args...), line: inst.where(L).Line, fn: fn})
}

// fail raises a registrar's error at the registering line.
func (inst *instance) fail(L *lua.LState, err error) {
	var e *errs.Error
	if !errors.As(err, &e) {
		e = &errs.Error{Code: errs.PluginLoadFailed, Msg: err.Error()}
	}
	raiseErr(L, e)
}

func (inst *instance) newPlugin(L *lua.LState) int {
	inst.checkLoading(L, "awaken.plugin")
	if inst.pluginUD != nil {
		raise(L, errs.PluginLoadFailed, "awaken.plugin is called twice in one file; one file holds one plugin")
	}
	spec := L.OptTable(1, L.CreateTable(0, 0))
	for _, k := range sortedLuaKeys(spec) {
		if !pluginFields[k] {
			raise(L, errs.PluginLoadFailed, "awaken.plugin: unknown field %q%s (fields: %s)",
				k, errs.DidYouMean(k, pluginFieldNames()), strings.Join(pluginFieldNames(), ", "))
		}
	}
	reg := inst.reg
	inst.checkTypes(L, spec, "awaken.plugin", map[string]lua.LValueType{"id": lua.LTString, "description": lua.LTString})
	if id, ok := spec.RawGetString("id").(lua.LString); ok && string(id) != reg.ID() {
		if !state.ValidName(string(id)) {
			raise(L, errs.PluginLoadFailed, "awaken.plugin: id %q is not valid: use a lowercase name such as \"guard\"", string(id))
		}
		reg.Rename(string(id))
	}
	desc, _ := spec.RawGetString("description").(lua.LString)
	reg.Describe(string(desc))
	var sch *schema.Schema
	if c := spec.RawGetString("config"); c != lua.LNil {
		ct, ok := c.(*lua.LTable)
		if !ok {
			raise(L, errs.PluginLoadFailed, "awaken.plugin: config must be a table of properties (a schema per config field)")
		}
		v, err := fromLua(ct, inst.null)
		if err != nil {
			raise(L, errs.PluginLoadFailed, "awaken.plugin: config: %v", err)
		}
		props, _ := v.(map[string]any)
		spec := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if _, isSchema := props["type"]; isSchema {
			if _, hasProps := props["properties"]; hasProps {
				spec = props // a full object schema
			}
		}
		sch, err = schema.Compile(spec)
		if err != nil {
			raise(L, errs.PluginLoadFailed, "awaken.plugin: config schema: %v", err)
		}
	}
	validate := inst.optFn(L, spec, "validate", "awaken.plugin: validate must be a function(config) returning nil or an error message")
	prepare := inst.optFn(L, spec, "prepare", "awaken.plugin: prepare must be a function(config) returning what the hooks read as ctx.prepared")
	inst.validateFn, inst.prepareFn = validate, prepare
	if validate >= 0 || prepare >= 0 {
		p := inst.p
		reg.Config(sch, func(cfg any) error { return p.configure(cfg) })
	} else {
		reg.Config(sch, nil)
	}
	if to := spec.RawGetString("hook_timeout"); to != lua.LNil {
		d, err := parseDurationValue(to)
		if err != nil {
			raise(L, errs.PluginLoadFailed, "awaken.plugin: hook_timeout: %v", err)
		}
		inst.timeout = d
	}
	priority := plugin.DefaultPriority
	if v := spec.RawGetString("priority"); v != lua.LNil {
		n, ok := v.(lua.LNumber)
		if !ok || float64(n) != math.Trunc(float64(n)) || math.IsInf(float64(n), 0) {
			raise(L, errs.PluginLoadFailed, "awaken.plugin: priority must be an integer from %d to %d (default %d, higher runs first), got a %s",
				plugin.MinPriority, plugin.MaxPriority, plugin.DefaultPriority, v.Type().String())
		}
		if float64(n) < plugin.MinPriority || float64(n) > plugin.MaxPriority {
			raise(L, errs.PluginLoadFailed, "awaken.plugin: priority %s is out of range: give an integer from %d to %d (default %d, higher runs first)",
				lua.LVAsString(v), plugin.MinPriority, plugin.MaxPriority, plugin.DefaultPriority)
		}
		priority = int(n)
		if err := reg.SetPriority(priority, inst.where(L)); err != nil {
			inst.fail(L, err)
		}
	}
	inst.record(L, -1, "awaken.plugin{id = %q, description = %q, config = %t, validate = %d, prepare = %d, hook_timeout = %s, priority = %d}",
		reg.ID(), desc, sch != nil, validate, prepare, inst.timeout, priority)
	ud := L.NewUserData()
	ud.Value = inst.p
	ud.Metatable = inst.pluginMeta
	inst.pluginUD = ud
	L.Push(ud)
	return 1
}

// checkTypes raises when a field of spec is set to a value of another type
// than types gives it: a value of the wrong type must not be taken as
// absent (scope = 1 as the default scope, persist = "no" as true).
func (inst *instance) checkTypes(L *lua.LState, spec *lua.LTable, what string, types map[string]lua.LValueType) {
	for _, k := range sortedLuaKeys(spec) {
		want, ok := types[k]
		if !ok {
			continue
		}
		if v := spec.RawGetString(k); v.Type() != want {
			raise(L, errs.PluginLoadFailed, "%s: %s must be a %s, got a %s", what, k, want.String(), v.Type().String())
		}
	}
}

// optFn registers the function in spec[field], if any, and returns its
// index (-1 for none); a value that is not a function raises msg.
func (inst *instance) optFn(L *lua.LState, spec *lua.LTable, field, msg string) int {
	switch v := spec.RawGetString(field).(type) {
	case *lua.LNilType:
		return -1
	case *lua.LFunction:
		return inst.addFn(v)
	}
	raise(L, errs.PluginLoadFailed, "%s", msg)
	return -1
}

func (inst *instance) checkSelf(L *lua.LState, method string) {
	if L.Get(1) != lua.LValue(inst.pluginUD) || inst.pluginUD == nil {
		raise(L, errs.PluginLoadFailed, "call it as p:%s(...) with a colon, on the plugin from awaken.plugin", method)
	}
	inst.checkLoading(L, "p:"+method)
}

func (inst *instance) addFn(fn lua.LValue) int {
	inst.fns = append(inst.fns, fn)
	return len(inst.fns) - 1
}

func (inst *instance) checkFn(L *lua.LState, n int, what string) *lua.LFunction {
	fn, ok := L.Get(n).(*lua.LFunction)
	if !ok {
		raise(L, errs.PluginLoadFailed, "%s: argument #%d must be a function, got %s", what, n-1, L.Get(n).Type().String())
	}
	return fn
}

var keyFields = map[string]bool{"scope": true, "merge": true, "schema": true, "default": true, "reducer": true, "persist": true}

func (inst *instance) regKey(L *lua.LState) int {
	inst.checkSelf(L, "key")
	name := L.CheckString(2)
	spec := L.OptTable(3, L.CreateTable(0, 0))
	for _, k := range sortedLuaKeys(spec) {
		if !keyFields[k] {
			raise(L, errs.PluginLoadFailed, "p:key(%q): unknown field %q%s (fields: scope, merge, schema, default, reducer, persist)",
				name, k, errs.DidYouMean(k, []string{"scope", "merge", "schema", "default", "reducer", "persist"}))
		}
	}
	inst.checkTypes(L, spec, fmt.Sprintf("p:key(%q)", name), map[string]lua.LValueType{"scope": lua.LTString, "merge": lua.LTString, "persist": lua.LTBool})
	s := state.Spec{Name: name}
	var err error
	if s.Scope, err = state.ParseScope(optString(spec, "scope")); err != nil {
		raise(L, errs.PluginLoadFailed, "p:key(%q): %v", name, err)
	}
	if s.Merge, err = state.ParseMerge(optString(spec, "merge")); err != nil {
		raise(L, errs.PluginLoadFailed, "p:key(%q): %v", name, err)
	}
	if sv := spec.RawGetString("schema"); sv != lua.LNil {
		v, err := fromLua(sv, inst.null)
		if err == nil {
			s.Schema, err = schema.Compile(v)
		}
		if err != nil {
			raise(L, errs.PluginLoadFailed, "p:key(%q): schema: %v", name, err)
		}
	}
	if dv := spec.RawGetString("default"); dv != lua.LNil {
		v, err := fromLua(dv, inst.null)
		if err != nil {
			raise(L, errs.PluginLoadFailed, "p:key(%q): default: %v", name, err)
		}
		s.Default = v
	}
	fn := -1
	switch r := spec.RawGetString("reducer").(type) {
	case *lua.LNilType:
	case lua.LString:
		s.Reducer = string(r)
	case *lua.LFunction:
		fn = inst.addFn(r)
		p := inst.p
		s.Reduce = func(cur, upd any) (any, error) { return p.reduce(fn, name, cur, upd) }
	default:
		raise(L, errs.PluginLoadFailed, "p:key(%q): reducer must be a name (%s) or a function(value, update)", name,
			strings.Join(state.ReducerNames(), ", "))
	}
	if pv, ok := spec.RawGetString("persist").(lua.LBool); ok {
		s.Transient = !bool(pv)
	}
	k, err := inst.reg.Key(s, inst.where(L))
	if err != nil {
		inst.fail(L, err)
	}
	inst.record(L, fn, "p:key(%q, {scope = %s, merge = %s, reducer = %q, persist = %t})", name, s.Scope, s.Merge, s.Reducer, !s.Transient)
	ud := L.NewUserData()
	ud.Value = &keyHandle{name: name, key: k}
	ud.Metatable = inst.handleMeta
	inst.handles = append(inst.handles, ud.Value.(*keyHandle))
	L.Push(ud)
	return 1
}

// actionPhases are the phases p:on and p:action take: all but tool_gate.
func actionPhases() []string {
	var out []string
	for _, n := range phase.Names() {
		if n != phase.ToolGate.String() {
			out = append(out, n)
		}
	}
	return out
}

func optString(t *lua.LTable, k string) string {
	if s, ok := t.RawGetString(k).(lua.LString); ok {
		return string(s)
	}
	return ""
}

func (inst *instance) regOn(L *lua.LState) int {
	inst.checkSelf(L, "on")
	name := L.CheckString(2)
	fn := inst.checkFn(L, 3, "p:on")
	p, ok := phase.Parse(name)
	if !ok || p == phase.ToolGate {
		hint := errs.DidYouMean(name, phase.Names())
		if p == phase.ToolGate {
			hint = "; use p:tool_gate(fn) for gates"
		}
		raise(L, errs.PluginLoadFailed, "p:on: unknown phase %q%s; phases: run_start, step_start, before_inference, after_inference, before_tool_execute, after_tool_execute, step_end, run_end", name, hint)
	}
	idx := inst.addFn(fn)
	if err := inst.reg.On(p, &luaHook{p: inst.p, fn: idx, phase: p}, inst.where(L)); err != nil {
		inst.fail(L, err)
	}
	inst.record(L, idx, "p:on(%q)", name)
	return 0
}

func (inst *instance) regGate(L *lua.LState) int {
	inst.checkSelf(L, "tool_gate")
	idx := inst.addFn(inst.checkFn(L, 2, "p:tool_gate"))
	if err := inst.reg.Gate(&luaGate{p: inst.p, fn: idx}, inst.where(L)); err != nil {
		inst.fail(L, err)
	}
	inst.record(L, idx, "p:tool_gate()")
	return 0
}

func (inst *instance) regAction(L *lua.LState) int {
	inst.checkSelf(L, "action")
	key := L.CheckString(2)
	spec := L.CheckTable(3)
	idx := inst.addFn(inst.checkFn(L, 4, "p:action"))
	for _, k := range sortedLuaKeys(spec) {
		if k != "phase" && k != "schema" {
			raise(L, errs.PluginLoadFailed, "p:action(%q): unknown field %q%s (fields: phase, schema)", key, k, errs.DidYouMean(k, []string{"phase", "schema"}))
		}
	}
	inst.checkTypes(L, spec, fmt.Sprintf("p:action(%q)", key), map[string]lua.LValueType{"phase": lua.LTString})
	if spec.RawGetString("phase") == lua.LNil {
		raise(L, errs.PluginLoadFailed, "p:action(%q): the spec needs the phase whose convergence loop runs the action: {phase = \"before_inference\"} (phases: %s)",
			key, strings.Join(actionPhases(), ", "))
	}
	ph, ok := phase.Parse(optString(spec, "phase"))
	if !ok {
		raise(L, errs.PluginLoadFailed, "p:action(%q): phase %q is not a phase%s; phases: %s", key, optString(spec, "phase"),
			errs.DidYouMean(optString(spec, "phase"), actionPhases()), strings.Join(actionPhases(), ", "))
	}
	var sch *schema.Schema
	if sv := spec.RawGetString("schema"); sv != lua.LNil {
		v, err := fromLua(sv, inst.null)
		if err == nil {
			sch, err = schema.Compile(v)
		}
		if err != nil {
			raise(L, errs.PluginLoadFailed, "p:action(%q): schema: %v", key, err)
		}
	}
	if err := inst.reg.Action(plugin.ActionSpec{Key: key, Phase: ph, Schema: sch, Pos: inst.where(L),
		Handler: &luaAction{p: inst.p, fn: idx, key: key}}); err != nil {
		inst.fail(L, err)
	}
	inst.record(L, idx, "p:action(%q, {phase = %q})", key, ph)
	return 0
}

func (inst *instance) regEffect(L *lua.LState) int {
	inst.checkSelf(L, "effect")
	key := L.CheckString(2)
	idx := inst.addFn(inst.checkFn(L, 3, "p:effect"))
	if err := inst.reg.Effect(plugin.EffectSpec{Key: key, Pos: inst.where(L),
		Handler: &luaEffect{p: inst.p, fn: idx, key: key}}); err != nil {
		inst.fail(L, err)
	}
	inst.record(L, idx, "p:effect(%q)", key)
	return 0
}

func (inst *instance) regTool(L *lua.LState) int {
	inst.checkSelf(L, "tool")
	spec := L.CheckTable(2)
	toolFields := []string{"id", "description", "parameters", "execute"}
	for _, k := range sortedLuaKeys(spec) {
		switch k {
		case "id", "description", "parameters", "execute":
		default:
			raise(L, errs.PluginLoadFailed, "p:tool: unknown field %q%s (fields: id, description, parameters, execute)", k, errs.DidYouMean(k, toolFields))
		}
	}
	fn, ok := spec.RawGetString("execute").(*lua.LFunction)
	if !ok {
		raise(L, errs.PluginLoadFailed, "p:tool: execute must be a function(ctx, args) returning a result")
	}
	idx := inst.addFn(fn)
	inst.checkTypes(L, spec, "p:tool", map[string]lua.LValueType{"id": lua.LTString, "description": lua.LTString})
	id := optString(spec, "id")
	if id == "" {
		raise(L, errs.PluginLoadFailed, "p:tool: id is required")
	}
	ts := model.ToolSpec{Name: id, Description: optString(spec, "description")}
	var sch *schema.Schema
	if pv := spec.RawGetString("parameters"); pv != lua.LNil {
		v, err := fromLua(pv, inst.null)
		if err == nil {
			if m, ok := v.(map[string]any); ok {
				if _, typed := m["type"]; !typed {
					// a table of properties
					v = map[string]any{"type": "object", "properties": m}
				}
			}
			sch, err = schema.Compile(v)
		}
		if err != nil {
			raise(L, errs.PluginLoadFailed, "p:tool(%q): parameters: %v", id, err)
		}
		ts.Parameters = sch.JSON()
	} else {
		ts.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	if err := inst.reg.Tool(&luaTool{p: inst.p, fn: idx, spec: ts, params: sch}, inst.where(L)); err != nil {
		inst.fail(L, err)
	}
	inst.record(L, idx, "p:tool{id = %q, description = %q}", id, ts.Description)
	return 0
}

func (inst *instance) regTransform(L *lua.LState) int {
	inst.checkSelf(L, "transform")
	idx := inst.addFn(inst.checkFn(L, 2, "p:transform"))
	if err := inst.reg.Transform(&luaTransform{p: inst.p, fn: idx}, inst.where(L)); err != nil {
		inst.fail(L, err)
	}
	inst.record(L, idx, "p:transform()")
	return 0
}

func (inst *instance) regResultTransform(L *lua.LState) int {
	inst.checkSelf(L, "result_transform")
	idx := inst.addFn(inst.checkFn(L, 2, "p:result_transform"))
	if err := inst.reg.ResultTransform(&luaResultTransform{p: inst.p, fn: idx}, inst.where(L)); err != nil {
		inst.fail(L, err)
	}
	inst.record(L, idx, "p:result_transform()")
	return 0
}

// sameRegistrations checks a state's registrations against the first
// state's: a plugin file that registers differently when it runs again
// (a count kept outside the state, a value from the host) would give
// states that disagree on what a function index means.
func (p *luaPlugin) sameRegistrations(regs []registration) error {
	at := func(line int) errs.Pos { return errs.Pos{File: p.file, Line: line} }
	for i := 0; i < len(regs) || i < len(p.regs); i++ {
		switch {
		case i >= len(p.regs):
			return &errs.Error{Code: errs.PluginLoadFailed, Pos: at(regs[i].line),
				Msg: fmt.Sprintf("running the plugin file again registered %s here, which its first run did not; a plugin file must register the same things every time it runs (no counts, clocks or host values at load time)", regs[i].what)}
		case i >= len(regs):
			return &errs.Error{Code: errs.PluginLoadFailed, Pos: at(p.regs[i].line),
				Msg: fmt.Sprintf("running the plugin file again did not register %s, which its first run did here; a plugin file must register the same things every time it runs (no counts, clocks or host values at load time)", p.regs[i].what)}
		case regs[i] != p.regs[i]:
			return &errs.Error{Code: errs.PluginLoadFailed, Pos: at(regs[i].line),
				Msg: fmt.Sprintf("running the plugin file again registered %s here, where its first run registered %s at line %d; a plugin file must register the same things every time it runs (no counts, clocks or host values at load time)",
					regs[i].what, p.regs[i].what, p.regs[i].line)}
		}
	}
	return nil
}
