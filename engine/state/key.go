// Package state holds typed state: key declarations, the reducers that
// combine updates with values, and the Store of (revision, values) with
// immutable snapshots that cost O(1) to take (docs/design.md, "State").
package state

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/schema"
)

// Scope says how long a key's value lives.
type Scope uint8

const (
	// ScopeRun values start fresh every run.
	ScopeRun Scope = iota
	// ScopeThread values are kept across runs of the same thread id.
	ScopeThread
)

func (s Scope) String() string {
	if s == ScopeThread {
		return "thread"
	}
	return "run"
}

// ParseScope reads "run" or "thread".
func ParseScope(s string) (Scope, error) {
	switch s {
	case "run", "":
		return ScopeRun, nil
	case "thread":
		return ScopeThread, nil
	}
	return 0, fmt.Errorf("scope %q is not one of \"run\", \"thread\"", s)
}

// Merge says whether parallel hooks may write a key in the same phase.
type Merge uint8

const (
	// Exclusive keys conflict when two hooks of a phase write them; the
	// engine then re-runs the later hook on a fresh snapshot.
	Exclusive Merge = iota
	// Commutative keys never conflict; updates apply in registration order.
	Commutative
)

func (m Merge) String() string {
	if m == Commutative {
		return "commutative"
	}
	return "exclusive"
}

// ParseMerge reads "exclusive" or "commutative".
func ParseMerge(s string) (Merge, error) {
	switch s {
	case "exclusive", "":
		return Exclusive, nil
	case "commutative":
		return Commutative, nil
	}
	return 0, fmt.Errorf("merge %q is not one of \"exclusive\", \"commutative\"", s)
}

// Spec declares a key.
type Spec struct {
	Name   string
	Scope  Scope
	Merge  Merge
	Schema *schema.Schema // nil accepts any value
	// Default is the value read while the key is absent, and the value the
	// first update is reduced with.
	Default any
	// Reducer names a built-in reducer ("replace" if empty, "add", "append",
	// "merge", "union"); Reduce, when set, is a custom one and wins.
	Reducer string
	Reduce  ReduceFunc
	// Transient keys are left out when state is saved (thread state at run
	// end, run state of a waiting run): they restart from the default.
	Transient bool
	// Trusted keys are written only by the runtime's own Go code, whose
	// values are canonical by construction: commits skip the walk that
	// checks a value (the runtime's bookkeeping is large and written often).
	Trusted bool
}

// Key is a declared key, registered in a Registry. Hooks hold *Key handles
// to read and write without a name lookup.
type Key struct {
	Spec
	Plugin string   // the plugin that declared it
	Pos    errs.Pos // where it was declared
	index  int
	reduce ReduceFunc
	// replaces is set for the built-in replace reducer, which ignores the
	// current value (so a commit does not build a lazy one); appends for
	// the built-in append reducer, whose result's size a commit derives
	// from the current value's and the items' (so it measures only them).
	replaces, appends bool
}

// Index is the key's position in its registry.
func (k *Key) Index() int { return k.index }

var namePattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$`)

// ValidName reports whether s is a well-formed key, action, effect or tool
// name: lowercase dotted labels of letters, digits and underscores.
func ValidName(s string) bool { return len(s) <= 128 && namePattern.MatchString(s) }

// NewKey checks a spec and makes a key handle for it.
func NewKey(spec Spec, plugin string, pos errs.Pos) (*Key, error) {
	fail := func(format string, args ...any) error {
		return &errs.Error{Code: errs.PluginLoadFailed, Pos: pos, Plugin: plugin, Key: spec.Name,
			Msg: fmt.Sprintf(format, args...)}
	}
	if !ValidName(spec.Name) {
		return nil, fail("key name %q is not valid: use lowercase dotted names such as \"guard.calls\"", spec.Name)
	}
	k := &Key{Spec: spec, Plugin: plugin, Pos: pos, index: -1}
	if spec.Reduce != nil {
		k.reduce = guarded(spec.Reduce)
	} else {
		r, ok := builtinReducers[spec.Reducer]
		if !ok {
			return nil, fail("key %q: reducer %q is not one of %s or a function", spec.Name, spec.Reducer,
				strings.Join(ReducerNames(), ", "))
		}
		k.reduce = r
		k.replaces = spec.Reducer == "" || spec.Reducer == "replace"
		k.appends = spec.Reducer == "append"
	}
	if spec.Default != nil {
		d, err := spec.Schema.Conform(spec.Default)
		if err != nil {
			return nil, &errs.Error{Code: errs.PluginLoadFailed, Pos: pos, Plugin: plugin, Key: spec.Name,
				Msg: fmt.Sprintf("key %q: the default does not fit the schema", spec.Name), Err: err}
		}
		k.Default = d
	}
	return k, nil
}

// Registry is the frozen set of keys of one plugin generation.
type Registry struct {
	keys   []*Key
	byName map[string]*Key
	depth  int
}

// NewRegistry indexes keys. It fails on a duplicate name, naming both places.
// A key may belong to one registry only.
func NewRegistry(keys []*Key) (*Registry, error) {
	r := &Registry{keys: keys, byName: make(map[string]*Key, len(keys))}
	for i, k := range keys {
		if prev, dup := r.byName[k.Name]; dup {
			return nil, &errs.Error{Code: errs.KeyAlreadyRegistered, Pos: k.Pos, Plugin: k.Plugin, Key: k.Name,
				Msg: fmt.Sprintf("%q is declared twice: at %s (plugin %s) and at %s (plugin %s); rename one",
					k.Name, placeOf(prev.Pos), prev.Plugin, placeOf(k.Pos), k.Plugin)}
		}
		if k.index >= 0 && k.index != i {
			return nil, fmt.Errorf("key %q already belongs to another registry", k.Name)
		}
		k.index = i
		r.byName[k.Name] = k
	}
	r.depth = depthFor(len(keys))
	return r, nil
}

func placeOf(p errs.Pos) string {
	if p.IsValid() {
		return p.String()
	}
	return "(go)"
}

// Key finds a key by name.
func (r *Registry) Key(name string) (*Key, bool) {
	k, ok := r.byName[name]
	return k, ok
}

// Keys lists the keys in registration order. Do not modify the slice.
func (r *Registry) Keys() []*Key { return r.keys }

// Len is the number of keys.
func (r *Registry) Len() int { return len(r.keys) }

// unknownKey is the error for a name that is not declared.
func (r *Registry) unknownKey(name, plugin string) error {
	names := make([]string, 0, len(r.keys))
	for _, k := range r.keys {
		names = append(names, k.Name)
	}
	return &errs.Error{Code: errs.UnknownKey, Plugin: plugin, Key: name,
		Msg: fmt.Sprintf("%q is not declared; declare it with p:key or fix the name%s", name, errs.DidYouMean(name, names))}
}
