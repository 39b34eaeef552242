package state

import (
	"unsafe"

	"fmt"
	"sync"
	"sync/atomic"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// Snapshot is an immutable view of a store at one revision. Taking one costs
// a pointer load; values read from it are shared and must not be mutated.
type Snapshot struct {
	reg  *Registry
	root unsafe.Pointer
	over *overlay // the latest commits' values, on top of root
	rev  uint64
}

// overlayMax bounds the overlay: past it, a commit folds the overlay into
// the trie.
const overlayMax = 16

// overlay holds the values of the latest commits above the trie: a commit
// copies it (a few entries) instead of copying a path of the trie for each
// key, so committing costs the same whatever the number of keys, and the
// trie's path copies happen once per overlayMax distinct keys (registries
// of up to 64 keys, whose trie is one or two nodes deep, skip it). Entries are
// unique per key index; a nil value shadows the trie (the key was reset).
type overlay struct {
	idx  []int
	vals []any
}

// value reads slot i: the overlay first, then the trie.
func (s *Snapshot) value(i int) any {
	if o := s.over; o != nil {
		for j, x := range o.idx {
			if x == i {
				return o.vals[j]
			}
		}
	}
	return get(s.root, s.reg.depth, i)
}

// Revision is the number of non-empty commits that led to this snapshot.
func (s *Snapshot) Revision() uint64 { return s.rev }

// Registry returns the keys this snapshot holds values for.
func (s *Snapshot) Registry() *Registry { return s.reg }

// Get returns the key's value, or its default when absent.
func (s *Snapshot) Get(k *Key) any {
	if v := s.value(k.index); v != nil {
		return v
	}
	return k.Default
}

// Has reports whether the key holds a value (not just its default).
func (s *Snapshot) Has(k *Key) bool { return s.value(k.index) != nil }

// Lookup reads a key by name; an undeclared name is unknown_key.
func (s *Snapshot) Lookup(name string) (any, error) {
	k, ok := s.reg.byName[name]
	if !ok {
		return nil, s.reg.unknownKey(name, "")
	}
	return s.Get(k), nil
}

// Values returns the keys that hold a value and pass keep (nil keeps all).
func (s *Snapshot) Values(keep func(*Key) bool) map[string]any {
	out := make(map[string]any)
	for _, k := range s.reg.keys {
		if keep != nil && !keep(k) {
			continue
		}
		if v := s.value(k.index); v != nil {
			out[k.Name] = v
		}
	}
	return out
}

// Update asks to reduce Value into the key named Key. Plugin names the writer
// for error messages.
type Update struct {
	Key    string
	Value  any
	Plugin string
}

// Misfit is a seeded value that no longer fits its key's schema: it is kept
// aside by the caller and the key starts from its default.
type Misfit struct {
	Key   string
	Value any
	Err   error
}

// Store holds (revision, values) and serializes commits.
type Store struct {
	mu   sync.Mutex
	cur  atomic.Pointer[Snapshot]
	base uint64 // the revision a fork started from
}

// NewStore makes a store at revision 0 holding seed (for example the thread
// state of an earlier run). Seeded values that do not fit their key's schema
// are returned as misfits and left out; names that are not declared are
// ignored (the caller keeps them, so a later generation can read them).
func NewStore(reg *Registry, seed map[string]any) (*Store, []Misfit) {
	var misfits []Misfit
	var root unsafe.Pointer
	var f fresh
	for _, k := range reg.keys {
		v, ok := seed[k.Name]
		if !ok || v == nil {
			continue
		}
		c, err := k.Schema.Conform(v)
		if err != nil {
			misfits = append(misfits, Misfit{Key: k.Name, Value: v, Err: err})
			continue
		}
		root, f = set(root, reg.depth, k.index, c, f, true)
	}
	s := &Store{}
	s.cur.Store(&Snapshot{reg: reg, root: root})
	return s, misfits
}

// NewStoreAt is NewStore starting at revision rev: a run restored from a
// checkpoint continues its revisions, so a client's If-Match and a store's
// compare-and-swap see one sequence across restarts.
func NewStoreAt(reg *Registry, seed map[string]any, rev uint64) (*Store, []Misfit) {
	s, misfits := NewStore(reg, seed)
	snap := *s.cur.Load()
	snap.rev = rev
	s.cur.Store(&snap)
	return s, misfits
}

// Snapshot returns the current snapshot.
func (s *Store) Snapshot() *Snapshot { return s.cur.Load() }

// Revision returns the current revision.
func (s *Store) Revision() uint64 { return s.cur.Load().rev }

// Commit applies updates atomically on top of revision base. A stale base is
// revision_conflict; an undeclared key is unknown_key; a value that does not
// fit its schema, or an update its reducer refuses, is schema_violation. On
// any error nothing is applied. A non-empty commit bumps the revision by one.
func (s *Store) Commit(base uint64, ups []Update) (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	if base != cur.rev {
		return nil, errs.New(errs.RevisionConflict,
			"the state moved from revision %d to %d while this command was prepared; retry on a fresh snapshot",
			base, cur.rev)
	}
	if len(ups) == 0 {
		return cur, nil
	}
	next, err := apply(cur, ups)
	if err != nil {
		return nil, err
	}
	s.cur.Store(next)
	return next, nil
}

// checked is the touched key's new value, conformed to its schema.
func (t touched) checked() (any, error) {
	if t.v == nil || t.k.Trusted {
		return t.v, nil
	}
	c, err := t.k.Schema.Conform(t.v)
	if err != nil {
		return nil, &errs.Error{Code: errs.SchemaViolation, Plugin: t.plugin, Key: t.k.Name,
			Msg: fmt.Sprintf("key %q: the value does not fit the key's schema: %s", t.k.Name, messageOf(err))}
	}
	return c, nil
}

type touched struct {
	k *Key
	v any
	// plugin is the last writer, for errors.
	plugin string
}

func apply(cur *Snapshot, ups []Update) (*Snapshot, error) {
	reg := cur.reg
	var buf [8]touched
	tk := buf[:0]
	for _, u := range ups {
		k, ok := reg.byName[u.Key]
		if !ok {
			return nil, reg.unknownKey(u.Key, u.Plugin)
		}
		i := -1
		for j := range tk {
			if tk[j].k == k {
				i = j
				break
			}
		}
		var old any
		if i >= 0 {
			old = tk[i].v
		} else {
			old = cur.value(k.index)
		}
		if old == nil {
			old = k.Default
		}
		nv, err := k.reduce(old, u.Value)
		if err != nil {
			return nil, &errs.Error{Code: errs.SchemaViolation, Plugin: u.Plugin, Key: k.Name,
				Msg: fmt.Sprintf("key %q: %v", k.Name, err)}
		}
		if i >= 0 {
			tk[i].v, tk[i].plugin = nv, u.Plugin
		} else {
			tk = append(tk, touched{k: k, v: nv, plugin: u.Plugin})
		}
	}
	if reg.depth <= 2 {
		// A shallow trie (up to 64 keys) is cheaper to copy than an
		// overlay: copy the path of each touched key.
		root := cur.root
		var fb [16]unsafe.Pointer
		f := fresh(fb[:0])
		track := len(tk) > 1
		for _, t := range tk {
			v, err := t.checked()
			if err != nil {
				return nil, err
			}
			root, f = set(root, reg.depth, t.k.index, v, f, track)
		}
		return &Snapshot{reg: reg, root: root, rev: cur.rev + 1}, nil
	}
	// The new overlay: the old one's entries for keys this commit did not
	// touch, then the touched keys.
	var over *overlay
	prev := cur.over
	n := len(tk)
	if prev != nil {
		n += len(prev.idx)
	}
	over = &overlay{idx: make([]int, 0, n), vals: make([]any, 0, n)}
	if prev != nil {
	outer:
		for j, i := range prev.idx {
			for _, t := range tk {
				if t.k.index == i {
					continue outer
				}
			}
			over.idx = append(over.idx, i)
			over.vals = append(over.vals, prev.vals[j])
		}
	}
	for _, t := range tk {
		v, err := t.checked()
		if err != nil {
			return nil, err
		}
		over.idx = append(over.idx, t.k.index)
		over.vals = append(over.vals, v)
	}
	root := cur.root
	if len(over.idx) > overlayMax {
		// Fold the overlay into the trie; nodes made for one entry are
		// written in place for the next.
		var fb [32]unsafe.Pointer
		f := fresh(fb[:0])
		for j, i := range over.idx {
			root, f = set(root, reg.depth, i, over.vals[j], f, true)
		}
		over = nil
	}
	return &Snapshot{reg: reg, root: root, over: over, rev: cur.rev + 1}, nil
}

// Fork returns a private store that starts at the current snapshot. Commits
// to the fork do not show in s until Publish; a fork that is dropped leaves
// s untouched. The engine runs each phase on a fork, so nothing of a failed
// phase is ever committed.
func (s *Store) Fork() *Store {
	cur := s.cur.Load()
	f := &Store{base: cur.rev}
	f.cur.Store(cur)
	return f
}

// Publish makes the fork's state current in s, provided s has not moved
// since the fork was taken (revision_conflict otherwise).
func (s *Store) Publish(f *Store) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	next := f.cur.Load()
	if next.rev == f.base { // the fork made no commits
		return nil
	}
	if cur.rev != f.base {
		return errs.New(errs.RevisionConflict,
			"the state moved from revision %d to %d while a phase ran on it; retry the phase", f.base, cur.rev)
	}
	s.cur.Store(next)
	f.base = next.rev
	return nil
}

// messageOf is an error's message without its code, for nesting.
func messageOf(err error) string {
	if e, ok := err.(*errs.Error); ok && e.Err == nil {
		return e.Msg
	}
	return err.Error()
}
