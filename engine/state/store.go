package state

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// Snapshot is an immutable view of a store at one revision. Taking one costs
// a pointer load; values read from it are shared and must not be mutated.
type Snapshot struct {
	reg  *Registry
	root unsafe.Pointer
	over *overlay // the latest commits' values, on top of root
	rev  uint64
	size int // the encoded size of every value, summed (see Limits)
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
	idx  []entry
	vals []any
}

// entry is an overlay entry's key index and its value's encoded size.
type entry struct{ i, n int32 }

// slot reads slot i: the overlay first, then the trie.
func (s *Snapshot) slot(i int) slot {
	if o := s.over; o != nil {
		for j, x := range o.idx {
			if int(x.i) == i {
				return slot{o.vals[j], int(x.n)}
			}
		}
	}
	return get(s.root, s.reg.depth, i)
}

// value reads the stored value of slot i (a Lazy one unbuilt).
func (s *Snapshot) value(i int) any { return s.slot(i).v }

// Revision is the number of non-empty commits that led to this snapshot.
func (s *Snapshot) Revision() uint64 { return s.rev }

// Registry returns the keys this snapshot holds values for.
func (s *Snapshot) Registry() *Registry { return s.reg }

// Get returns the key's value, or its default when absent.
func (s *Snapshot) Get(k *Key) any {
	if v := s.value(k.index); v != nil {
		if k.Trusted { // only the runtime's keys hold Lazy values
			return built(v)
		}
		return v
	}
	return k.Default
}

// Raw returns the key's stored value as committed, a Lazy one unbuilt, or
// nil when the key is absent: the runtime derives the next version of its
// own bookkeeping from it without building the value.
func (s *Snapshot) Raw(k *Key) any { return s.value(k.index) }

// Has reports whether the key holds a value (not just its default).
func (s *Snapshot) Has(k *Key) bool { return s.value(k.index) != nil }

// Size is the length of the state's values, each encoded as JSON, summed.
func (s *Snapshot) Size() int { return s.size }

// SizeOf is the length of the key's value encoded as JSON (0 when absent).
func (s *Snapshot) SizeOf(k *Key) int { return s.slot(k.index).n }

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
			if k.Trusted {
				v = built(v)
			}
			out[k.Name] = v
		}
	}
	return out
}

// Lazy is a value built on first read. The runtime's own bookkeeping (the
// step's tool calls) changes one entry per commit: kept as a persistent
// structure, with the map that plugins read built only when someone reads
// it, such a commit costs O(log n) instead of a copy of n entries. Only
// trusted keys (Spec.Trusted) hold one; readers never see it (Get, Values
// and reducers see the built value), and the producer finds its structure
// again with Snapshot.Raw.
type Lazy interface {
	// Value builds the value on first call and returns the same one ever
	// after; it is safe for concurrent use.
	Value() any
	// EncodedSize is the length of the built value encoded as JSON, which
	// the store counts against Limits.MaxState without building it.
	EncodedSize() int
}

// NewLazy makes a Lazy value that build makes on first read.
func NewLazy(size int, build func() any) Lazy { return &funcLazy{size: size, build: build} }

type funcLazy struct {
	size  int
	once  sync.Once
	build func() any
	v     any
}

func (l *funcLazy) Value() any {
	l.once.Do(func() { l.v, l.build = l.build(), nil })
	return l.v
}

func (l *funcLazy) EncodedSize() int { return l.size }

func built(v any) any {
	if l, ok := v.(Lazy); ok {
		return l.Value()
	}
	return v
}

// Limits bound a store's state, each value measured as the length of its
// JSON encoding. A commit measures only the values it touches: the store
// keeps each key's size and their sum.
type Limits struct {
	// MaxValue bounds one key's value (0: DefaultMaxValue). The runtime's
	// own keys (Spec.Trusted) are bounded by MaxState only: they grow with
	// the work (the step's tool calls), not with what a plugin keeps.
	MaxValue int
	// MaxState bounds the sum of every key's value (0: DefaultMaxState).
	MaxState int
}

// The default limits ([runtime] max_value_size and max_state_size), and
// the largest a limit may be.
const (
	DefaultMaxValue = 1 << 20
	DefaultMaxState = 16 << 20
	MaxLimit        = 1 << 30
)

// WithDefaults fills the defaults in, and lowers a limit past MaxLimit to
// it.
func (l Limits) WithDefaults() Limits {
	if l.MaxValue <= 0 {
		l.MaxValue = DefaultMaxValue
	}
	if l.MaxState <= 0 {
		l.MaxState = DefaultMaxState
	}
	l.MaxValue, l.MaxState = min(l.MaxValue, MaxLimit), min(l.MaxState, MaxLimit)
	return l
}

// measure returns the encoded size of k's value v, counting no further than
// past what the limits allow k.
func (l Limits) measure(k *Key, plugin string, v any) (int, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case float64, string, bool, map[string]any, []any: // canonical: no Lazy
	default:
		if lz, ok := x.(Lazy); ok && k.Trusted {
			return lz.EncodedSize(), nil
		}
	}
	limit := l.MaxState
	if !k.Trusted {
		limit = min(limit, l.MaxValue)
	}
	n, err := value.EncodedSize(v, limit)
	if err != nil && k.Trusted {
		// The runtime's values may hold Go numbers that encoding/json
		// writes and the canonical encoder refuses (a Go gate's result).
		b, jerr := json.Marshal(v)
		if jerr == nil {
			return len(b), nil
		}
	}
	if err != nil {
		return 0, &errs.Error{Code: errs.SchemaViolation, Plugin: plugin, Key: k.Name,
			Msg: fmt.Sprintf("key %q: the value cannot be stored as JSON: %v", k.Name, err)}
	}
	return n, nil
}

// appendBase returns the length of the list the append reducer appends to
// (old: the stored value, or the default) and its encoded size, or -1 when
// the commit must measure the whole result.
func appendBase(stored slot, k *Key, old any) (from, base int) {
	switch x := old.(type) {
	case nil:
		from = 0
	case []any:
		from = len(x)
	case map[string]any: // an empty table reads as an empty list
		if len(x) != 0 {
			return -1, 0
		}
	default:
		return -1, 0
	}
	switch {
	case stored.v != nil:
		base = stored.n
	case k.Default != nil:
		n, err := value.EncodedSize(k.Default, MaxLimit)
		if err != nil {
			return -1, 0
		}
		base = n
	default:
		base = 2 // []
	}
	return from, base
}

// measureTouched measures t's new value v: for the append reducer, from
// the size before the commit and the appended items alone, so appending to
// a long list does not walk it.
func (l Limits) measureTouched(t *touched, v any) (int, error) {
	list, ok := v.([]any)
	if t.from < 0 || !ok || len(list) < int(t.from) {
		return l.measure(t.k, t.plugin, v)
	}
	limit := l.MaxState
	if !t.k.Trusted {
		limit = min(limit, l.MaxValue)
	}
	n := int(t.base)
	added := list[t.from:]
	for _, it := range added {
		m, err := value.EncodedSize(it, max(limit-n, 0))
		if err != nil {
			return l.measure(t.k, t.plugin, v) // the whole value's error
		}
		if n += m; n > limit {
			return n, nil
		}
	}
	switch {
	case len(added) > 0 && t.from > 0:
		n += len(added) // a comma before each
	case len(added) > 0:
		n += len(added) - 1
	}
	return n, nil
}

// tooLarge is the state_too_large error for key k written by plugin: its
// value is n bytes (past MaxValue), or the state would be total bytes (past
// MaxState). stored says the value was loaded, not committed.
func (l Limits) tooLarge(k *Key, plugin string, n, total int, stored bool) error {
	e := &errs.Error{Code: errs.StateTooLarge, Plugin: plugin, Key: k.Name}
	switch {
	case n > l.MaxValue && !k.Trusted && stored:
		e.Msg = fmt.Sprintf("the stored value of key %q is %s encoded, past the %s of [runtime] max_value_size (it was saved under a larger limit): raise max_value_size in awaken.toml, or remove the key from the stored thread or run",
			k.Name, sizeText(n), sizeText(l.MaxValue))
	case n > l.MaxValue && !k.Trusted:
		e.Msg = fmt.Sprintf("key %q would hold %s encoded, past the %s of [runtime] max_value_size, so nothing was committed: keep the value bounded (a window of recent items, a count or a summary rather than every item) or raise max_value_size in awaken.toml",
			k.Name, sizeText(n), sizeText(l.MaxValue))
	case stored:
		e.Msg = fmt.Sprintf("the stored state is %s encoded with key %q, past the %s of [runtime] max_state_size (it was saved under a larger limit): raise max_state_size in awaken.toml, or remove keys from the stored thread or run",
			sizeText(total), k.Name, sizeText(l.MaxState))
	default:
		e.Msg = fmt.Sprintf("the run's state would be %s encoded after this update of key %q (%s), past the %s of [runtime] max_state_size, so nothing was committed: bound the keys that grow or raise max_state_size in awaken.toml",
			sizeText(total), k.Name, sizeText(n), sizeText(l.MaxState))
	}
	return e
}

// sizeText renders a number of bytes for messages: "1 MiB", "1.50 MiB",
// "12.00 KiB", "900 bytes".
func sizeText(n int) string {
	for _, u := range []struct {
		n    int
		name string
	}{{1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		switch {
		case n >= u.n && n%u.n == 0:
			return fmt.Sprintf("%d %s", n/u.n, u.name)
		case n >= u.n:
			return fmt.Sprintf("%.2f %s", float64(n)/float64(u.n), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
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
	lim  Limits
}

// NewStore makes a store at revision 0 holding seed (for example the thread
// state of an earlier run), with the default limits. Seeded values that do
// not fit their key's schema, or the limits, are returned as misfits and
// left out; names that are not declared are ignored (the caller keeps them,
// so a later generation can read them).
func NewStore(reg *Registry, seed map[string]any) (*Store, []Misfit) {
	return NewStoreAt(reg, seed, 0)
}

// NewStoreAt is NewStore starting at revision rev: a run restored from a
// checkpoint continues its revisions, so a client's If-Match and a store's
// compare-and-swap see one sequence across restarts.
func NewStoreAt(reg *Registry, seed map[string]any, rev uint64) (*Store, []Misfit) {
	s, misfits, _ := open(reg, seed, rev, Limits{}, false)
	return s, misfits
}

// Open makes a store at revision rev holding seed, bounded by lim. Seeded
// values that do not fit their key's schema are returned as misfits and
// left out, like NewStoreAt's; a seed past the limits (saved under larger
// ones) is state_too_large and no store is made, so a run that outgrew its
// limits fails the same way after a restart instead of loading.
func Open(reg *Registry, seed map[string]any, rev uint64, lim Limits) (*Store, []Misfit, error) {
	return open(reg, seed, rev, lim, true)
}

func open(reg *Registry, seed map[string]any, rev uint64, lim Limits, strict bool) (*Store, []Misfit, error) {
	lim = lim.WithDefaults()
	var misfits []Misfit
	var root unsafe.Pointer
	var f fresh
	total := 0
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
		n, err := lim.measure(k, k.Plugin, c)
		if err == nil && ((n > lim.MaxValue && !k.Trusted) || total+n > lim.MaxState) {
			err = lim.tooLarge(k, k.Plugin, n, total+n, true)
		}
		if err != nil {
			if strict {
				return nil, nil, err
			}
			misfits = append(misfits, Misfit{Key: k.Name, Value: v, Err: err})
			continue
		}
		total += n
		root, f = set(root, reg.depth, k.index, slot{c, n}, f, true)
	}
	s := &Store{lim: lim}
	s.cur.Store(&Snapshot{reg: reg, root: root, rev: rev, size: total})
	return s, misfits, nil
}

// Limits returns the store's limits, defaults filled in.
func (s *Store) Limits() Limits { return s.lim }

// Snapshot returns the current snapshot.
func (s *Store) Snapshot() *Snapshot { return s.cur.Load() }

// Revision returns the current revision.
func (s *Store) Revision() uint64 { return s.cur.Load().rev }

// Commit applies updates atomically on top of revision base. A stale base is
// revision_conflict; an undeclared key is unknown_key; a value that does not
// fit its schema, or an update its reducer refuses, is schema_violation; a
// value or a state past the store's limits is state_too_large. On any error
// nothing is applied. A non-empty commit bumps the revision by one.
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
	next, err := apply(cur, ups, s.lim)
	if err != nil {
		return nil, err
	}
	s.cur.Store(next)
	return next, nil
}

// checked is the touched key's new value, conformed to its schema.
func (t *touched) checked() (any, error) {
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
	n      int32 // v's encoded size
	old    int32 // the stored value's encoded size
	// For the append reducer: the length of the list before this commit
	// appended to it (-1: measure the whole value) and its encoded size.
	from, base int32
}

func apply(cur *Snapshot, ups []Update, lim Limits) (*Snapshot, error) {
	reg := cur.reg
	var buf [4]touched
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
		var stored slot
		if i < 0 {
			stored = cur.slot(k.index)
		}
		var old any
		if !k.replaces { // replace ignores the current value: do not build a lazy one
			if i >= 0 {
				old = tk[i].v
			} else {
				old = stored.v
			}
			if old == nil {
				old = k.Default
			}
			if k.Trusted {
				old = built(old)
			}
		}
		nv, err := k.reduce(old, u.Value)
		if err != nil {
			return nil, &errs.Error{Code: errs.SchemaViolation, Plugin: u.Plugin, Key: k.Name,
				Msg: fmt.Sprintf("key %q: %v", k.Name, err)}
		}
		if i >= 0 {
			tk[i].v, tk[i].plugin = nv, u.Plugin
		} else {
			tk = append(tk, touched{k: k, v: nv, plugin: u.Plugin, old: int32(stored.n), from: -1})
			if k.appends {
				t := &tk[len(tk)-1]
				from, base := appendBase(stored, k, old)
				t.from, t.base = int32(from), int32(base)
			}
		}
	}
	// Conform and measure each touched value; the state's size changes by
	// the touched keys' sizes alone.
	total := cur.size
	biggest, biggestN := 0, -1
	for j := range tk {
		t := &tk[j]
		v, err := t.checked()
		if err != nil {
			return nil, err
		}
		var n int
		if _, ok := v.(float64); ok { // the common counter, measured inline
			n, err = value.EncodedSize(v, 0)
		} else {
			n, err = lim.measureTouched(t, v)
		}
		if err != nil {
			return nil, err
		}
		if n > lim.MaxValue && !t.k.Trusted {
			return nil, lim.tooLarge(t.k, t.plugin, n, 0, false)
		}
		total += n - int(t.old)
		t.v, t.n = v, int32(n)
		if n > biggestN {
			biggest, biggestN = j, n
		}
	}
	if total > lim.MaxState {
		t := tk[biggest]
		return nil, lim.tooLarge(t.k, t.plugin, biggestN, total, false)
	}
	if reg.depth <= 2 {
		// A shallow trie (up to 64 keys) is cheaper to copy than an
		// overlay: copy the path of each touched key.
		root := cur.root
		var fb [16]unsafe.Pointer
		f := fresh(fb[:0])
		track := len(tk) > 1
		for _, t := range tk {
			root, f = set(root, reg.depth, t.k.index, slot{t.v, int(t.n)}, f, track)
		}
		return &Snapshot{reg: reg, root: root, rev: cur.rev + 1, size: total}, nil
	}
	// The new overlay: the old one's entries for keys this commit did not
	// touch, then the touched keys.
	var over *overlay
	prev := cur.over
	n := len(tk)
	if prev != nil {
		n += len(prev.idx)
	}
	over = &overlay{idx: make([]entry, 0, n), vals: make([]any, 0, n)}
	if prev != nil {
	outer:
		for j, e := range prev.idx {
			for _, t := range tk {
				if t.k.index == int(e.i) {
					continue outer
				}
			}
			over.idx = append(over.idx, e)
			over.vals = append(over.vals, prev.vals[j])
		}
	}
	for _, t := range tk {
		over.idx = append(over.idx, entry{int32(t.k.index), t.n})
		over.vals = append(over.vals, t.v)
	}
	root := cur.root
	if len(over.idx) > overlayMax {
		// Fold the overlay into the trie; nodes made for one entry are
		// written in place for the next.
		var fb [32]unsafe.Pointer
		f := fresh(fb[:0])
		for j, e := range over.idx {
			root, f = set(root, reg.depth, int(e.i), slot{over.vals[j], int(e.n)}, f, true)
		}
		over = nil
	}
	return &Snapshot{reg: reg, root: root, over: over, rev: cur.rev + 1, size: total}, nil
}

// Fork returns a private store that starts at the current snapshot. Commits
// to the fork do not show in s until Publish; a fork that is dropped leaves
// s untouched. The engine runs each phase on a fork, so nothing of a failed
// phase is ever committed.
func (s *Store) Fork() *Store {
	f := new(Store)
	s.ForkInto(f)
	return f
}

// ForkInto is Fork into f, which must not be in use: a phase transaction
// keeps one fork for all the phases it runs, so a phase allocates none.
func (s *Store) ForkInto(f *Store) {
	cur := s.cur.Load()
	f.base, f.lim = cur.rev, s.lim
	f.cur.Store(cur)
}

// Drop lets go of the state a fork holds, for a fork kept between uses.
func (s *Store) Drop() { s.cur.Store(nil) }

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
