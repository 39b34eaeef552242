package luabridge

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// A plugin's prepare (awaken.plugin{prepare = function(config) ... end})
// turns a config into what its hooks read as ctx.prepared: rules parsed,
// lists indexed, anything that depends on the config alone. The host runs
// it when it configures an agent (with validate, under the load budget),
// so a failing prepare fails the configuration with its file:line; its
// result is converted to Go once, kept per generation by the config's
// contents, and shared by all the plugin's states. Each state converts it
// to Lua on first use, behind read-only views, and keeps that per config.

// preparedMax bounds the configs whose prepared values a plugin keeps; past
// it they are made again on demand.
const preparedMax = 256

// preparedCache holds a plugin's prepared values by the canonical JSON of
// their config. Safe for concurrent use.
type preparedCache struct {
	mu sync.Mutex
	m  map[string]prepared
}

type prepared struct{ v any }

func (c *preparedCache) get(key string) (prepared, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *preparedCache) put(key string, v prepared) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= preparedMax {
		c.m = map[string]prepared{}
	}
	c.m[key] = v
}

// configKey is the identity of a config's contents.
func configKey(cfg any) (string, error) {
	b, err := value.AppendJSON(nil, cfg)
	return string(b), err
}

// configure is the plugin's check of one agent's config, run by the host
// (plugin.Set.Configure, the awaken.toml loader): validate, then prepare,
// whose result is kept for the hooks.
func (p *luaPlugin) configure(cfg any) error {
	if p.validateFn >= 0 {
		if err := p.validateConfig(p.validateFn, cfg); err != nil {
			return err
		}
	}
	if p.prepareFn < 0 {
		return nil
	}
	key, err := configKey(cfg)
	if err != nil {
		return &errs.Error{Code: errs.ConfigInvalid, Plugin: p.id, Msg: err.Error()}
	}
	if _, ok := p.prepared.get(key); ok {
		return nil
	}
	var out prepared
	err = p.invoke(context.Background(), invocation{fn: p.prepareFn, kind: "prepare function", phase: "load", nret: 1,
		budget: p.gen.limits.LoadTimeout,
		args: func(inst *instance, _ *hookCall) int {
			inst.L.Push(toLua(inst.L, inst.null, cfgOrEmpty(cfg)))
			return 1
		},
		results: func(inst *instance) error {
			var err error
			out, err = inst.preparedFrom(inst.L.Get(-1))
			return err
		}})
	if err != nil {
		return err
	}
	p.prepared.put(key, out)
	return nil
}

func cfgOrEmpty(cfg any) any {
	if cfg == nil {
		return map[string]any{}
	}
	return cfg
}

// preparedFrom converts what prepare returned.
func (inst *instance) preparedFrom(v lua.LValue) (prepared, error) {
	g, err := fromLuaShared(v, inst.null)
	if err != nil {
		return prepared{}, &errs.Error{Code: errs.HookFailed, Pos: errs.Pos{File: inst.p.file},
			Msg: fmt.Sprintf("prepare returned what cannot be shared between Lua states (%v); return plain tables, strings, numbers, booleans and compiled awaken.rules", err)}
	}
	return prepared{v: g}, nil
}

// configCache is one state's Lua tables of the config a hook last read and
// of what prepare made of it, with the identity of that config (its map,
// which the cache keeps alive, so the identity is never reused).
type configCache struct {
	id       unsafe.Pointer
	config   lua.LValue
	prepared lua.LValue
}

// configOf is the plugin's config for the call and its identity: the
// agent's config map, or the plugin's default.
func (inst *instance) configOf(in *plugin.Input) (any, unsafe.Pointer) {
	cfg := in.Config(inst.p.id)
	if cfg == nil {
		cfg = inst.p.defaultConfig
	}
	if m, ok := cfg.(map[string]any); ok && m != nil {
		return cfg, reflect.ValueOf(m).UnsafePointer()
	}
	if cfg == nil {
		return nil, unsafe.Pointer(inst.p) // no config: one per plugin
	}
	return cfg, nil
}

// cacheFor returns the state's cache for the config with this identity,
// emptied when it held another config's tables.
func (inst *instance) cacheFor(id unsafe.Pointer) *configCache {
	if inst.conf.id != id || id == nil {
		inst.conf = configCache{id: id}
	}
	return &inst.conf
}

// configTable converts the plugin's config for this call. A config is
// immutable for a generation and an agent, so its Lua table is kept per
// state and handed to every call with the same config: converting a
// permission plugin's rules on every gate decision cost more than the
// decision. Every table in it is a read-only view, so no call can change
// what a later call (another thread's) sees.
func (inst *instance) configTable(in *plugin.Input) lua.LValue {
	cfg, id := inst.configOf(in)
	c := inst.cacheFor(id)
	if c.config == nil {
		v := deepView(inst.L, inst.null, cfg, "ctx.config")
		if v == lua.LNil {
			v = newView(inst.L, inst.L.CreateTable(0, 0), "ctx.config")
		}
		c.config = v
	}
	return c.config
}

// preparedTable is ctx.prepared: what the plugin's prepare made of the
// call's config, nil without a prepare. A config the host never configured
// (a host that builds plugin.Input by hand) is prepared here, once per
// generation, within the hook's budget; a prepare that fails fails the
// hook.
func (inst *instance) preparedTable(L *lua.LState, in *plugin.Input) lua.LValue {
	p := inst.p
	if p.prepareFn < 0 {
		return lua.LNil
	}
	cfg, id := inst.configOf(in)
	c := inst.cacheFor(id)
	if c.prepared != nil {
		return c.prepared
	}
	key, err := configKey(cfg)
	if err != nil {
		raise(L, errs.ConfigInvalid, "%v", err)
	}
	v, ok := p.prepared.get(key)
	if !ok {
		L.Push(inst.fns[p.prepareFn])
		L.Push(toLua(L, inst.null, cfgOrEmpty(cfg)))
		if err := L.PCall(1, 1, nil); err != nil {
			e := luaError(err, errs.HookFailed)
			e.Msg = "prepare: " + e.Msg
			raiseErr(L, e)
		}
		v, err = inst.preparedFrom(L.Get(-1))
		L.Pop(1)
		if err != nil {
			raiseErr(L, err.(*errs.Error))
		}
		p.prepared.put(key, v)
	}
	c.prepared = deepView(L, inst.null, v.v, "ctx.prepared")
	return c.prepared
}
