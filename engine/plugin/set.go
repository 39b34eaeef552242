package plugin

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// Reserved prefixes: only runtime built-ins may declare names under them.
const (
	RuntimeKeyPrefix    = "__runtime."
	RuntimeActionPrefix = "runtime."
)

var toolNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

// ValidToolName reports whether s can name a tool: letters, digits, '_',
// '.', '-', at most 64 characters, as model APIs accept.
func ValidToolName(s string) bool { return toolNamePattern.MatchString(s) }

// HookEntry is a phase hook with its plugin.
type HookEntry struct {
	Plugin string
	Pos    errs.Pos
	Hook   Hook
}

// GateEntry is a gate hook with its plugin.
type GateEntry struct {
	Plugin string
	Pos    errs.Pos
	Hook   GateHook
}

// ToolEntry is a tool with its plugin.
type ToolEntry struct {
	Plugin string
	Pos    errs.Pos
	Tool   Tool
	Name   string
}

// TransformEntry is a request transform with its plugin.
type TransformEntry struct {
	Plugin    string
	Pos       errs.Pos
	Transform RequestTransform
}

// ResultTransformEntry is a result transform with its plugin.
type ResultTransformEntry struct {
	Plugin    string
	Pos       errs.Pos
	Transform ResultTransform
}

// ActionEntry is a declared action with its plugin.
type ActionEntry struct {
	ActionSpec
	Plugin string
}

// EffectEntry is a declared effect handler with its plugin.
type EffectEntry struct {
	EffectSpec
	Plugin string
}

// Registrar collects one plugin's registrations.
type Registrar struct {
	info    Info
	keys    []*state.Key
	actions []*ActionEntry
	effects []*EffectEntry
	hooks   []struct {
		phase phase.Phase
		HookEntry
	}
	gates      []GateEntry
	tools      []ToolEntry
	transforms []TransformEntry
	results    []ResultTransformEntry
	closed     bool
}

// NewRegistrar starts the registration of the plugin with the given id.
// Loaders that build a plugin's registrations themselves (luabridge) use it;
// NewSet makes one for every Plugin.
func NewRegistrar(id string, pos errs.Pos) *Registrar {
	return &Registrar{info: Info{ID: id, Pos: pos, Priority: DefaultPriority}}
}

// Plugin priorities: higher runs first.
const (
	MinPriority     = 0
	MaxPriority     = 1000
	DefaultPriority = 500
)

// SetPriority sets the plugin's priority (see Info.Priority).
func (r *Registrar) SetPriority(n int, pos errs.Pos) error {
	if n < MinPriority || n > MaxPriority {
		return r.fail(errs.PluginLoadFailed, pos, "", "priority %d is out of range: give an integer from %d to %d (default %d, higher runs first)",
			n, MinPriority, MaxPriority, DefaultPriority)
	}
	r.info.Priority = n
	return nil
}

// ID is the plugin's id.
func (r *Registrar) ID() string { return r.info.ID }

func (r *Registrar) fail(code errs.Code, pos errs.Pos, key, format string, args ...any) error {
	return &errs.Error{Code: code, Pos: pos, Plugin: r.info.ID, Key: key, Msg: fmt.Sprintf(format, args...)}
}

func (r *Registrar) check(pos errs.Pos) error {
	if r.closed {
		return r.fail(errs.PluginLoadFailed, pos, "", "registration after the plugin has loaded: register keys, hooks and tools when the plugin file runs, not from a hook")
	}
	return nil
}

// Describe sets the plugin's description.
func (r *Registrar) Describe(s string) { r.info.Description = s }

// SetBuiltin marks the plugin as a runtime built-in (never filtered out).
func (r *Registrar) SetBuiltin() { r.info.Builtin = true }

// Config declares the schema of the plugin's config and an optional check
// beyond the schema.
func (r *Registrar) Config(s *schema.Schema, validate func(cfg any) error) {
	r.info.Config = s
	r.info.ValidateConfig = validate
}

func (r *Registrar) reserved(name, prefix, what string, pos errs.Pos) error {
	if strings.HasPrefix(name, prefix) && !r.info.Builtin {
		return r.fail(errs.PluginLoadFailed, pos, name, "%s %q uses the reserved prefix %q; choose a name of your own such as %q",
			what, name, prefix, r.info.ID+"."+strings.TrimPrefix(name, prefix))
	}
	return nil
}

// Key declares a state key and returns its handle.
func (r *Registrar) Key(spec state.Spec, pos errs.Pos) (*state.Key, error) {
	if err := r.check(pos); err != nil {
		return nil, err
	}
	if err := r.reserved(spec.Name, RuntimeKeyPrefix, "key", pos); err != nil {
		return nil, err
	}
	for _, k := range r.keys {
		if k.Name == spec.Name {
			return nil, r.fail(errs.KeyAlreadyRegistered, pos, spec.Name, "%q is declared twice: at %s and at %s; rename one",
				spec.Name, placeOf(k.Pos), placeOf(pos))
		}
	}
	k, err := state.NewKey(spec, r.info.ID, pos)
	if err != nil {
		return nil, err
	}
	r.keys = append(r.keys, k)
	return k, nil
}

// Action declares an action and its handler. Actions cannot belong to
// tool_gate: gates are pure.
func (r *Registrar) Action(spec ActionSpec) error {
	if err := r.check(spec.Pos); err != nil {
		return err
	}
	if !state.ValidName(spec.Key) {
		return r.fail(errs.PluginLoadFailed, spec.Pos, spec.Key, "action name %q is not valid: use lowercase dotted names such as \"guard.reset\"", spec.Key)
	}
	if err := r.reserved(spec.Key, RuntimeActionPrefix, "action", spec.Pos); err != nil {
		return err
	}
	if !spec.Phase.Valid() || spec.Phase == phase.ToolGate {
		return r.fail(errs.PluginLoadFailed, spec.Pos, spec.Key, "action %q: phase %s cannot run actions; use one of %s",
			spec.Key, spec.Phase, strings.Join(actionPhases(), ", "))
	}
	if spec.Handler == nil {
		return r.fail(errs.PluginLoadFailed, spec.Pos, spec.Key, "action %q has no handler", spec.Key)
	}
	for _, a := range r.actions {
		if a.Key == spec.Key {
			return r.fail(errs.HandlerAlreadyRegistered, spec.Pos, spec.Key, "action %q is declared twice: at %s and at %s",
				spec.Key, placeOf(a.Pos), placeOf(spec.Pos))
		}
	}
	r.actions = append(r.actions, &ActionEntry{ActionSpec: spec, Plugin: r.info.ID})
	return nil
}

func actionPhases() []string {
	var out []string
	for _, p := range phase.All {
		if p != phase.ToolGate {
			out = append(out, p.String())
		}
	}
	return out
}

// Effect declares an effect handler.
func (r *Registrar) Effect(spec EffectSpec) error {
	if err := r.check(spec.Pos); err != nil {
		return err
	}
	if !state.ValidName(spec.Key) {
		return r.fail(errs.PluginLoadFailed, spec.Pos, spec.Key, "effect name %q is not valid: use lowercase dotted names such as \"guard.notify\"", spec.Key)
	}
	if err := r.reserved(spec.Key, RuntimeActionPrefix, "effect", spec.Pos); err != nil {
		return err
	}
	if spec.Handler == nil {
		return r.fail(errs.PluginLoadFailed, spec.Pos, spec.Key, "effect %q has no handler", spec.Key)
	}
	for _, e := range r.effects {
		if e.Key == spec.Key {
			return r.fail(errs.HandlerAlreadyRegistered, spec.Pos, spec.Key, "effect %q is declared twice: at %s and at %s",
				spec.Key, placeOf(e.Pos), placeOf(spec.Pos))
		}
	}
	r.effects = append(r.effects, &EffectEntry{EffectSpec: spec, Plugin: r.info.ID})
	return nil
}

// On adds a hook for a phase other than tool_gate.
func (r *Registrar) On(p phase.Phase, h Hook, pos errs.Pos) error {
	if err := r.check(pos); err != nil {
		return err
	}
	if !p.Valid() || p == phase.ToolGate {
		return r.fail(errs.PluginLoadFailed, pos, "", "cannot hook phase %s with on(); use one of %s (tool_gate has its own registration)",
			p, strings.Join(actionPhases(), ", "))
	}
	if h == nil {
		return r.fail(errs.PluginLoadFailed, pos, "", "hook for %s is nil", p)
	}
	r.hooks = append(r.hooks, struct {
		phase phase.Phase
		HookEntry
	}{p, HookEntry{Plugin: r.info.ID, Pos: pos, Hook: h}})
	return nil
}

// Gate adds a tool gate hook.
func (r *Registrar) Gate(h GateHook, pos errs.Pos) error {
	if err := r.check(pos); err != nil {
		return err
	}
	if h == nil {
		return r.fail(errs.PluginLoadFailed, pos, "", "gate hook is nil")
	}
	r.gates = append(r.gates, GateEntry{Plugin: r.info.ID, Pos: pos, Hook: h})
	return nil
}

// Tool adds a tool.
func (r *Registrar) Tool(t Tool, pos errs.Pos) error {
	if err := r.check(pos); err != nil {
		return err
	}
	if t == nil {
		return r.fail(errs.PluginLoadFailed, pos, "", "tool is nil")
	}
	name := t.Spec().Name
	if !ValidToolName(name) {
		return r.fail(errs.PluginLoadFailed, pos, name, "tool id %q is not valid: use letters, digits, '_', '.' or '-', at most 64 characters", name)
	}
	for _, o := range r.tools {
		if o.Name == name {
			return r.fail(errs.ToolAlreadyRegistered, pos, name, "tool %q is registered twice: at %s and at %s",
				name, placeOf(o.Pos), placeOf(pos))
		}
	}
	r.tools = append(r.tools, ToolEntry{Plugin: r.info.ID, Pos: pos, Tool: t, Name: name})
	return nil
}

// Transform adds a request transform.
func (r *Registrar) Transform(t RequestTransform, pos errs.Pos) error {
	if err := r.check(pos); err != nil {
		return err
	}
	r.transforms = append(r.transforms, TransformEntry{Plugin: r.info.ID, Pos: pos, Transform: t})
	return nil
}

// ResultTransform adds a tool result transform.
func (r *Registrar) ResultTransform(t ResultTransform, pos errs.Pos) error {
	if err := r.check(pos); err != nil {
		return err
	}
	r.results = append(r.results, ResultTransformEntry{Plugin: r.info.ID, Pos: pos, Transform: t})
	return nil
}

func placeOf(p errs.Pos) string {
	if p.IsValid() {
		return p.String()
	}
	return "(go)"
}

// Set is the frozen registry of one plugin generation.
type Set struct {
	infos   []Info
	byID    map[string]int
	reg     *state.Registry
	actions map[string]*ActionEntry
	effects map[string]*EffectEntry
	all     *View
}

// NewSet registers plugins in order. Every problem is reported (an
// errs.List), duplicates naming both places.
func NewSet(plugins ...Plugin) (*Set, error) {
	regs, err := Registrars(plugins...)
	if err != nil {
		return nil, err
	}
	return Build(regs...)
}

func safeRegister(p Plugin, r *Registrar) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &errs.Error{Code: errs.PluginLoadFailed, Plugin: p.ID(), Msg: fmt.Sprintf("panic while registering: %v", v)}
		}
	}()
	return p.Register(r)
}

// Build freezes registrars into a Set, in hook order: priority (higher
// first), then plugin id. Loaders that register plugins themselves call
// it directly.
func Build(regs ...*Registrar) (*Set, error) {
	regs = slices.Clone(regs)
	slices.SortStableFunc(regs, func(a, b *Registrar) int {
		if a.info.Priority != b.info.Priority {
			return b.info.Priority - a.info.Priority
		}
		return strings.Compare(a.info.ID, b.info.ID)
	})
	s := &Set{
		byID:    map[string]int{},
		actions: map[string]*ActionEntry{},
		effects: map[string]*EffectEntry{},
	}
	var list errs.List
	var keys []*state.Key
	keyAt := map[string]*state.Key{}
	tools := map[string]ToolEntry{}
	v := &View{set: s, tools: map[string]ToolEntry{}}
	for _, r := range regs {
		r.closed = true
		id := r.info.ID
		if prev, dup := s.byID[id]; dup {
			list.Add(&errs.Error{Code: errs.PluginLoadFailed, Pos: r.info.Pos, Plugin: id,
				Msg: fmt.Sprintf("plugin id %q is used twice: at %s and at %s; give one a different id",
					id, placeOf(s.infos[prev].Pos), placeOf(r.info.Pos))})
			continue
		}
		s.byID[id] = len(s.infos)
		s.infos = append(s.infos, r.info)
		for _, k := range r.keys {
			if prev, dup := keyAt[k.Name]; dup {
				list.Add(&errs.Error{Code: errs.KeyAlreadyRegistered, Pos: k.Pos, Plugin: id, Key: k.Name,
					Msg: fmt.Sprintf("%q is declared at %s (plugin %s) and at %s (plugin %s); rename one",
						k.Name, placeOf(prev.Pos), prev.Plugin, placeOf(k.Pos), id)})
				continue
			}
			keyAt[k.Name] = k
			keys = append(keys, k)
		}
		for _, a := range r.actions {
			if prev, dup := s.actions[a.Key]; dup {
				list.Add(&errs.Error{Code: errs.HandlerAlreadyRegistered, Pos: a.Pos, Plugin: id, Key: a.Key,
					Msg: fmt.Sprintf("action %q is declared at %s (plugin %s) and at %s (plugin %s)",
						a.Key, placeOf(prev.Pos), prev.Plugin, placeOf(a.Pos), id)})
				continue
			}
			s.actions[a.Key] = a
		}
		for _, e := range r.effects {
			if prev, dup := s.effects[e.Key]; dup {
				list.Add(&errs.Error{Code: errs.HandlerAlreadyRegistered, Pos: e.Pos, Plugin: id, Key: e.Key,
					Msg: fmt.Sprintf("effect %q is handled at %s (plugin %s) and at %s (plugin %s)",
						e.Key, placeOf(prev.Pos), prev.Plugin, placeOf(e.Pos), id)})
				continue
			}
			s.effects[e.Key] = e
		}
		for _, t := range r.tools {
			if prev, dup := tools[t.Name]; dup {
				list.Add(&errs.Error{Code: errs.ToolAlreadyRegistered, Pos: t.Pos, Plugin: id, Key: t.Name,
					Msg: fmt.Sprintf("tool %q is registered at %s (plugin %s) and at %s (plugin %s)",
						t.Name, placeOf(prev.Pos), prev.Plugin, placeOf(t.Pos), id)})
				continue
			}
			tools[t.Name] = t
		}
		v.add(r)
	}
	reg, err := state.NewRegistry(keys)
	if err != nil {
		list.Add(err)
	}
	if err := list.Err(); err != nil {
		return nil, err
	}
	s.reg = reg
	s.all = v
	return s, nil
}

// Registry returns the keys of every plugin.
func (s *Set) Registry() *state.Registry { return s.reg }

// Action finds a declared action.
func (s *Set) Action(key string) (*ActionEntry, bool) {
	a, ok := s.actions[key]
	return a, ok
}

// Effect finds a declared effect handler.
func (s *Set) Effect(key string) (*EffectEntry, bool) {
	e, ok := s.effects[key]
	return e, ok
}

// ActionKeys lists the declared actions, sorted.
func (s *Set) ActionKeys() []string { return sortedKeys(s.actions) }

// EffectKeys lists the declared effects, sorted.
func (s *Set) EffectKeys() []string { return sortedKeys(s.effects) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Plugins lists the registered plugins in the set's order: priority
// (higher first), then plugin id.
func (s *Set) Plugins() []Info { return s.infos }

// Plugin finds a plugin by id.
func (s *Set) Plugin(id string) (Info, bool) {
	i, ok := s.byID[id]
	if !ok {
		return Info{}, false
	}
	return s.infos[i], true
}

// Registrars registers plugins into fresh registrars, for loaders that add
// registrars of their own before calling Build.
func Registrars(plugins ...Plugin) ([]*Registrar, error) {
	var regs []*Registrar
	var list errs.List
	for _, p := range plugins {
		r := NewRegistrar(p.ID(), errs.Pos{})
		if b, ok := p.(Builtin); ok && b.Builtin() {
			r.SetBuiltin()
		}
		if err := safeRegister(p, r); err != nil {
			list.Add(err)
			continue
		}
		regs = append(regs, r)
	}
	return regs, list.Err()
}

// Rename changes the plugin's id before anything is registered (a Lua
// plugin may set its id in awaken.plugin{id = ...}).
func (r *Registrar) Rename(id string) {
	if len(r.keys)+len(r.actions)+len(r.effects)+len(r.hooks)+len(r.gates)+len(r.tools)+len(r.transforms)+len(r.results) == 0 {
		r.info.ID = id
	}
}

// Configure validates plugin configs for one agent: each plugin with a
// config schema gets raw[id] (or an empty table) with its defaults filled,
// then its own check. A config for a plugin that is not in the set is an
// error. Problems are config_invalid, with the schema's path after the
// plugin id (permission.rules[2].tool).
func (s *Set) Configure(raw map[string]any) (map[string]any, error) {
	out := map[string]any{}
	var list errs.List
	for id := range raw {
		if _, ok := s.byID[id]; !ok {
			var ids []string
			for _, in := range s.infos {
				ids = append(ids, in.ID)
			}
			list.Add(errs.New(errs.ConfigInvalid, "config for plugin %q, which is not loaded%s", id, errs.DidYouMean(id, ids)))
		}
	}
	for _, in := range s.infos {
		v, given := raw[in.ID]
		if in.Config == nil {
			if given && v != nil {
				if m, ok := v.(map[string]any); !ok || len(m) > 0 {
					list.Add(errs.New(errs.ConfigInvalid, "plugin %q takes no config", in.ID))
				}
			}
			continue
		}
		if v == nil {
			v = map[string]any{}
		}
		v, err := value.Normalize(v)
		if err != nil {
			list.Add(errs.New(errs.ConfigInvalid, "config of %s: %v", in.ID, err))
			continue
		}
		c, err := in.Config.Conform(v)
		if err != nil {
			list.Add(&errs.Error{Code: errs.ConfigInvalid, Msg: in.ID + strings.TrimPrefix(messageOf(err), "$")})
			continue
		}
		if in.ValidateConfig != nil {
			if err := in.ValidateConfig(c); err != nil {
				list.Add(err)
				continue
			}
		}
		out[in.ID] = c
	}
	return out, list.Err()
}

func messageOf(err error) string {
	if e, ok := err.(*errs.Error); ok && e.Err == nil {
		return e.Msg
	}
	return err.Error()
}

// Description lists what one plugin registered, for `awaken-lua check`
// and the sidecar's /v1/plugins.
type Description struct {
	ID          string   `json:"id"`
	Description string   `json:"description,omitempty"`
	File        string   `json:"file,omitempty"`
	Builtin     bool     `json:"builtin,omitempty"`
	Priority    int      `json:"priority"`
	Keys        []string `json:"keys"`
	Hooks       []string `json:"hooks"` // phases, "tool_gate", "transform", "result_transform"
	Tools       []string `json:"tools"`
	Actions     []string `json:"actions"`
	Effects     []string `json:"effects"`
	Config      bool     `json:"config"` // has a config schema
}

// Describe lists every plugin's registrations in the set's order.
func (s *Set) Describe() []Description {
	out := make([]Description, len(s.infos))
	for i, in := range s.infos {
		out[i] = Description{ID: in.ID, Description: in.Description, File: in.Pos.File, Builtin: in.Builtin, Priority: in.Priority,
			Config: in.Config != nil, Keys: []string{}, Hooks: []string{}, Tools: []string{}, Actions: []string{}, Effects: []string{}}
	}
	at := func(id string) *Description { return &out[s.byID[id]] }
	for _, k := range s.reg.Keys() {
		d := at(k.Plugin)
		d.Keys = append(d.Keys, k.Name+" ("+k.Scope.String()+", "+k.Merge.String()+")")
	}
	a := s.all
	for _, p := range phase.All {
		for _, h := range a.hooks[p] {
			d := at(h.Plugin)
			d.Hooks = append(d.Hooks, p.String())
		}
	}
	for _, g := range a.gates {
		d := at(g.Plugin)
		d.Hooks = append(d.Hooks, "tool_gate")
	}
	for _, t := range a.transforms {
		d := at(t.Plugin)
		d.Hooks = append(d.Hooks, "transform")
	}
	for _, t := range a.results {
		d := at(t.Plugin)
		d.Hooks = append(d.Hooks, "result_transform")
	}
	for _, t := range a.toolList {
		d := at(t.Plugin)
		d.Tools = append(d.Tools, t.Name)
	}
	for _, k := range s.ActionKeys() {
		e := s.actions[k]
		d := at(e.Plugin)
		d.Actions = append(d.Actions, k+" ("+e.Phase.String()+")")
	}
	for _, k := range s.EffectKeys() {
		d := at(s.effects[k].Plugin)
		d.Effects = append(d.Effects, k)
	}
	return out
}
