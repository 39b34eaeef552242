package luabridge

import (
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
)

// keyHandle is what p:key returns: hooks read and write through it without
// a name lookup.
type keyHandle struct {
	name string
	key  *state.Key
}

// pluginMethodNames lists the methods of the plugin object.
func pluginMethodNames() []string {
	var out []string
	for name := range (&instance{}).pluginMethods() {
		out = append(out, name)
	}
	return out
}

func (inst *instance) setupPluginObject() {
	L := inst.L
	methods := inst.pluginMethods()
	idx := L.CreateTable(0, len(methods))
	for name, fn := range methods {
		idx.RawSetString(name, L.NewFunction(fn))
	}
	inst.setupPluginMeta(idx)
}

func (inst *instance) pluginMethods() map[string]lua.LGFunction {
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

func (inst *instance) setupPluginMeta(idx *lua.LTable) {
	L := inst.L
	inst.pluginMeta = L.CreateTable(0, 3)
	inst.pluginMeta.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		k := L.CheckString(2)
		switch k {
		case "id":
			L.Push(lua.LString(inst.p.id))
		default:
			L.Push(idx.RawGetString(k))
		}
		return 1
	}))
	inst.pluginMeta.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("the plugin object is read-only; register with p:on, p:key, p:tool_gate, ...")
		return 0
	}))
	inst.pluginMeta.RawSetString("__metatable", lua.LString("protected"))
}

var pluginFields = map[string]bool{"id": true, "description": true, "config": true, "validate": true, "hook_timeout": true}

func (inst *instance) checkLoading(L *lua.LState, what string) {
	if !inst.loading {
		raise(L, errs.PluginLoadFailed, "%s after the plugin has loaded: register when the plugin file runs, not from a hook", what)
	}
}

func (inst *instance) where(L *lua.LState) errs.Pos {
	return parseWhere(L.Where(1))
}

// fail records a registration error in the first instance and raises it.
func (inst *instance) fail(L *lua.LState, err error) {
	var e *errs.Error
	if !asErr(err, &e) {
		e = &errs.Error{Code: errs.PluginLoadFailed, Msg: err.Error()}
	}
	if !e.Pos.IsValid() {
		e = e.At(inst.where(L))
	}
	L.RaiseError("%s", e.Code.Error()+": "+e.Msg)
}

func asErr(err error, e **errs.Error) bool {
	x, ok := err.(*errs.Error)
	if ok {
		*e = x
	}
	return ok
}

func (inst *instance) newPlugin(L *lua.LState) int {
	inst.checkLoading(L, "awaken.plugin")
	if inst.pluginUD != nil {
		raise(L, errs.PluginLoadFailed, "awaken.plugin is called twice in one file; one file holds one plugin")
	}
	spec := L.OptTable(1, L.CreateTable(0, 0))
	for _, k := range sortedLuaKeys(spec) {
		if !pluginFields[k] {
			raise(L, errs.PluginLoadFailed, "awaken.plugin: unknown field %q%s (fields: id, description, config, validate, hook_timeout)",
				k, errs.DidYouMean(k, []string{"id", "description", "config", "validate", "hook_timeout"}))
		}
	}
	if id, ok := spec.RawGetString("id").(lua.LString); ok && string(id) != inst.p.id {
		if inst.registrar != nil {
			if !state.ValidName(string(id)) {
				raise(L, errs.PluginLoadFailed, "awaken.plugin: id %q is not valid: use a lowercase name such as \"guard\"", string(id))
			}
			inst.p.id = string(id)
			inst.registrar.Rename(string(id))
		}
	}
	if inst.registrar != nil {
		if d, ok := spec.RawGetString("description").(lua.LString); ok {
			inst.registrar.Describe(string(d))
		}
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
		var validate func(any) error
		if fn, ok := spec.RawGetString("validate").(*lua.LFunction); ok {
			idx := inst.addFn(fn)
			p := inst.p
			validate = func(cfg any) error { return p.validateConfig(idx, cfg) }
		} else if spec.RawGetString("validate") != lua.LNil {
			raise(L, errs.PluginLoadFailed, "awaken.plugin: validate must be a function(config) returning nil or an error message")
		}
		inst.registrar.Config(sch, validate)
		if to := spec.RawGetString("hook_timeout"); to != lua.LNil {
			d, err := parseDurationValue(to)
			if err != nil {
				raise(L, errs.PluginLoadFailed, "awaken.plugin: hook_timeout: %v", err)
			}
			inst.p.timeout = d
		}
	} else if fn, ok := spec.RawGetString("validate").(*lua.LFunction); ok {
		inst.addFn(fn)
	}
	ud := L.NewUserData()
	ud.Value = inst.p
	ud.Metatable = inst.pluginMeta
	inst.pluginUD = ud
	L.Push(ud)
	return 1
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
	var reducerFn *lua.LFunction
	if fn, ok := spec.RawGetString("reducer").(*lua.LFunction); ok {
		reducerFn = fn
	}
	fnIdx := -1
	if reducerFn != nil {
		fnIdx = inst.addFn(reducerFn)
	}
	h := &keyHandle{name: name}
	if inst.registrar != nil {
		for _, k := range sortedLuaKeys(spec) {
			if !keyFields[k] {
				raise(L, errs.PluginLoadFailed, "p:key(%q): unknown field %q%s (fields: scope, merge, schema, default, reducer, persist)",
					name, k, errs.DidYouMean(k, []string{"scope", "merge", "schema", "default", "reducer", "persist"}))
			}
		}
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
		switch r := spec.RawGetString("reducer").(type) {
		case *lua.LNilType:
		case lua.LString:
			s.Reducer = string(r)
		case *lua.LFunction:
			p := inst.p
			s.Reduce = func(cur, upd any) (any, error) { return p.reduce(fnIdx, name, cur, upd) }
		default:
			raise(L, errs.PluginLoadFailed, "p:key(%q): reducer must be a name (%s) or a function(value, update)", name,
				strings.Join(state.ReducerNames(), ", "))
		}
		if pv, ok := spec.RawGetString("persist").(lua.LBool); ok {
			s.Transient = !bool(pv)
		}
		k, err := inst.registrar.Key(s, inst.where(L))
		if err != nil {
			inst.fail(L, err)
		}
		h.key = k
		inst.p.keys[name] = k
	} else {
		h.key = inst.p.keys[name]
	}
	ud := L.NewUserData()
	ud.Value = h
	ud.Metatable = inst.handleMeta
	inst.handles[name] = ud
	L.Push(ud)
	return 1
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
	if inst.registrar != nil {
		if err := inst.registrar.On(p, &luaHook{p: inst.p, fn: idx, phase: p}, inst.where(L)); err != nil {
			inst.fail(L, err)
		}
	}
	return 0
}

func (inst *instance) regGate(L *lua.LState) int {
	inst.checkSelf(L, "tool_gate")
	fn := inst.checkFn(L, 2, "p:tool_gate")
	idx := inst.addFn(fn)
	if inst.registrar != nil {
		if err := inst.registrar.Gate(&luaGate{p: inst.p, fn: idx}, inst.where(L)); err != nil {
			inst.fail(L, err)
		}
	}
	return 0
}

func (inst *instance) regAction(L *lua.LState) int {
	inst.checkSelf(L, "action")
	key := L.CheckString(2)
	spec := L.CheckTable(3)
	fn := inst.checkFn(L, 4, "p:action")
	idx := inst.addFn(fn)
	if inst.registrar == nil {
		return 0
	}
	for _, k := range sortedLuaKeys(spec) {
		if k != "phase" && k != "schema" {
			raise(L, errs.PluginLoadFailed, "p:action(%q): unknown field %q (fields: phase, schema)", key, k)
		}
	}
	ph, ok := phase.Parse(optString(spec, "phase"))
	if !ok {
		raise(L, errs.PluginLoadFailed, "p:action(%q): phase %q is not a phase%s", key, optString(spec, "phase"),
			errs.DidYouMean(optString(spec, "phase"), phase.Names()))
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
	pos := inst.where(L)
	if err := inst.registrar.Action(plugin.ActionSpec{Key: key, Phase: ph, Schema: sch, Pos: pos,
		Handler: &luaAction{p: inst.p, fn: idx, key: key}}); err != nil {
		inst.fail(L, err)
	}
	return 0
}

func (inst *instance) regEffect(L *lua.LState) int {
	inst.checkSelf(L, "effect")
	key := L.CheckString(2)
	fn := inst.checkFn(L, 3, "p:effect")
	idx := inst.addFn(fn)
	if inst.registrar != nil {
		if err := inst.registrar.Effect(plugin.EffectSpec{Key: key, Pos: inst.where(L),
			Handler: &luaEffect{p: inst.p, fn: idx, key: key}}); err != nil {
			inst.fail(L, err)
		}
	}
	return 0
}

func (inst *instance) regTool(L *lua.LState) int {
	inst.checkSelf(L, "tool")
	spec := L.CheckTable(2)
	fn, ok := spec.RawGetString("execute").(*lua.LFunction)
	if !ok {
		raise(L, errs.PluginLoadFailed, "p:tool: execute must be a function(ctx, args) returning a result")
	}
	idx := inst.addFn(fn)
	if inst.registrar == nil {
		return 0
	}
	for _, k := range sortedLuaKeys(spec) {
		switch k {
		case "id", "description", "parameters", "execute":
		default:
			raise(L, errs.PluginLoadFailed, "p:tool: unknown field %q (fields: id, description, parameters, execute)", k)
		}
	}
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
	if err := inst.registrar.Tool(&luaTool{p: inst.p, fn: idx, spec: ts, params: sch}, inst.where(L)); err != nil {
		inst.fail(L, err)
	}
	return 0
}

func (inst *instance) regTransform(L *lua.LState) int {
	inst.checkSelf(L, "transform")
	idx := inst.addFn(inst.checkFn(L, 2, "p:transform"))
	if inst.registrar != nil {
		if err := inst.registrar.Transform(&luaTransform{p: inst.p, fn: idx}, inst.where(L)); err != nil {
			inst.fail(L, err)
		}
	}
	return 0
}

func (inst *instance) regResultTransform(L *lua.LState) int {
	inst.checkSelf(L, "result_transform")
	idx := inst.addFn(inst.checkFn(L, 2, "p:result_transform"))
	if inst.registrar != nil {
		if err := inst.registrar.ResultTransform(&luaResultTransform{p: inst.p, fn: idx}, inst.where(L)); err != nil {
			inst.fail(L, err)
		}
	}
	return 0
}
