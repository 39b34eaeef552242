package state_test

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

func mustKey(t testing.TB, spec state.Spec) *state.Key {
	t.Helper()
	k, err := state.NewKey(spec, "test", errs.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newStore(t testing.TB, specs ...state.Spec) (*state.Store, *state.Registry) {
	t.Helper()
	var keys []*state.Key
	for _, s := range specs {
		keys = append(keys, mustKey(t, s))
	}
	reg, err := state.NewRegistry(keys)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := state.NewStore(reg, nil)
	return st, reg
}

func commit(t testing.TB, st *state.Store, ups ...state.Update) *state.Snapshot {
	t.Helper()
	s, err := st.Commit(st.Revision(), ups)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func get(t testing.TB, s *state.Snapshot, name string) any {
	t.Helper()
	v, err := s.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestReducers(t *testing.T) {
	tests := []struct {
		name    string
		reducer string
		def     any
		updates []any
		want    any
		wantErr string
	}{
		{"replace", "replace", nil, []any{1.0, "x"}, "x", ""},
		{"default reducer replaces", "", nil, []any{1.0, 2.0}, 2.0, ""},
		{"add from absent", "add", nil, []any{2.0, 3.0}, 5.0, ""},
		{"add from default", "add", 10.0, []any{1.0}, 11.0, ""},
		{"add non-number", "add", nil, []any{"x"}, nil, "not a number"},
		{"append item", "append", nil, []any{"a", "b"}, []any{"a", "b"}, ""},
		{"append list", "append", []any{"x"}, []any{[]any{"a", "b"}}, []any{"x", "a", "b"}, ""},
		{"append to non-list", "append", "s", []any{"a"}, nil, "not a list"},
		{"merge sets and removes", "merge", map[string]any{"a": 1.0, "b": 2.0},
			[]any{map[string]any{"b": value.Null{}, "c": 3.0}}, map[string]any{"a": 1.0, "c": 3.0}, ""},
		{"merge non-table", "merge", nil, []any{"x"}, nil, "not a table"},
		{"union keeps first appearance", "union", []any{"a"}, []any{[]any{"b", "a", "c", "b"}, "c"},
			[]any{"a", "b", "c"}, ""},
		{"union of tables", "union", nil, []any{map[string]any{"x": 1.0}, map[string]any{"x": 1.0}},
			[]any{map[string]any{"x": 1.0}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := newStore(t, state.Spec{Name: "k", Reducer: tc.reducer, Default: tc.def})
			var err error
			for _, u := range tc.updates {
				_, err = st.Commit(st.Revision(), []state.Update{{Key: "k", Value: u, Plugin: "p"}})
				if err != nil {
					break
				}
			}
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, errs.SchemaViolation) {
					t.Fatalf("err = %v, want schema_violation", err)
				}
				if !contains(err.Error(), tc.wantErr) || !contains(err.Error(), `"k"`) {
					t.Fatalf("err = %q, want it to mention %q and the key", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := get(t, st.Snapshot(), "k"); !value.Equal(got, tc.want) {
				t.Fatalf("got %s, want %s", value.String(got), value.String(tc.want))
			}
		})
	}
}

func TestCustomReducer(t *testing.T) {
	maxR := func(cur, upd any) (any, error) {
		c, _ := cur.(float64)
		u, ok := upd.(float64)
		if !ok {
			return nil, fmt.Errorf("max wants numbers")
		}
		return max(c, u), nil
	}
	st, _ := newStore(t, state.Spec{Name: "m", Reduce: maxR})
	commit(t, st, state.Update{Key: "m", Value: 3.0}, state.Update{Key: "m", Value: 1.0}, state.Update{Key: "m", Value: 7.0})
	if got := get(t, st.Snapshot(), "m"); got != 7.0 {
		t.Fatalf("got %v", got)
	}
	if _, err := st.Commit(st.Revision(), []state.Update{{Key: "m", Value: "x"}}); !errors.Is(err, errs.SchemaViolation) {
		t.Fatalf("err = %v", err)
	}
}

// A plugin's own reducer that panics fails the commit, naming the key,
// and leaves the state as it was.
func TestCustomReducerPanics(t *testing.T) {
	boom := func(cur, upd any) (any, error) { panic("boom") }
	st, reg := newStore(t, state.Spec{Name: "m", Reduce: boom}, state.Spec{Name: "n"})
	rev := st.Revision()
	_, err := st.Commit(rev, []state.Update{{Key: "n", Value: 1.0}, {Key: "m", Value: 3.0}})
	if !errors.Is(err, errs.SchemaViolation) || !contains(err.Error(), `"m"`) || !contains(err.Error(), "panicked: boom") {
		t.Fatalf("err = %v", err)
	}
	n, _ := reg.Key("n")
	if st.Revision() != rev || st.Snapshot().Get(n) != nil {
		t.Fatal("a failed commit changed the state")
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestSnapshotsAreImmutable(t *testing.T) {
	st, _ := newStore(t, state.Spec{Name: "a", Reducer: "add"}, state.Spec{Name: "b"})
	s0 := st.Snapshot()
	s1 := commit(t, st, state.Update{Key: "a", Value: 1.0})
	s2 := commit(t, st, state.Update{Key: "a", Value: 1.0}, state.Update{Key: "b", Value: "x"})
	if s0.Revision() != 0 || s1.Revision() != 1 || s2.Revision() != 2 {
		t.Fatalf("revisions %d %d %d", s0.Revision(), s1.Revision(), s2.Revision())
	}
	if get(t, s0, "a") != nil || get(t, s1, "a") != 1.0 || get(t, s2, "a") != 2.0 {
		t.Fatalf("values %v %v %v", get(t, s0, "a"), get(t, s1, "a"), get(t, s2, "a"))
	}
	if get(t, s1, "b") != nil || get(t, s2, "b") != "x" {
		t.Fatal("b leaked into an older snapshot")
	}
}

func TestCommitRules(t *testing.T) {
	st, _ := newStore(t,
		state.Spec{Name: "n", Schema: schema.MustCompile(map[string]any{"type": "integer"}), Reducer: "add"},
		state.Spec{Name: "cfg", Schema: schema.MustCompile(map[string]any{"type": "object",
			"properties": map[string]any{"tool": map[string]any{"type": "string"}}})},
	)
	t.Run("empty commit does not bump", func(t *testing.T) {
		r := st.Revision()
		s, err := st.Commit(r, nil)
		if err != nil || s.Revision() != r {
			t.Fatalf("rev %d err %v", s.Revision(), err)
		}
	})
	t.Run("one bump for many updates", func(t *testing.T) {
		r := st.Revision()
		s := commit(t, st, state.Update{Key: "n", Value: 1.0}, state.Update{Key: "n", Value: 1.0}, state.Update{Key: "cfg", Value: map[string]any{}})
		if s.Revision() != r+1 || get(t, s, "n") != 2.0 {
			t.Fatalf("rev %d n %v", s.Revision(), get(t, s, "n"))
		}
	})
	t.Run("unknown key applies nothing", func(t *testing.T) {
		before := st.Snapshot()
		_, err := st.Commit(before.Revision(), []state.Update{{Key: "n", Value: 5.0}, {Key: "nn", Value: 1.0, Plugin: "guard"}})
		if !errors.Is(err, errs.UnknownKey) {
			t.Fatalf("err = %v", err)
		}
		if !contains(err.Error(), `did you mean "n"`) {
			t.Errorf("no suggestion in %q", err)
		}
		if st.Snapshot() != before {
			t.Fatal("a failed commit changed the store")
		}
	})
	t.Run("schema violation names plugin key and path", func(t *testing.T) {
		before := st.Snapshot()
		_, err := st.Commit(before.Revision(), []state.Update{{Key: "n", Value: 1.0}, {Key: "cfg", Value: map[string]any{"tool": 3.0}, Plugin: "guard"}})
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.SchemaViolation || e.Plugin != "guard" || e.Key != "cfg" {
			t.Fatalf("err = %#v", err)
		}
		if !contains(err.Error(), "$.tool") {
			t.Errorf("no path in %q", err)
		}
		if st.Snapshot() != before {
			t.Fatal("a failed commit changed the store")
		}
	})
	t.Run("non-integer", func(t *testing.T) {
		_, err := st.Commit(st.Revision(), []state.Update{{Key: "n", Value: 0.5}})
		if !errors.Is(err, errs.SchemaViolation) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("stale base", func(t *testing.T) {
		_, err := st.Commit(st.Revision()-1, []state.Update{{Key: "n", Value: 1.0}})
		if !errors.Is(err, errs.RevisionConflict) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestConcurrentCommitsOneWins(t *testing.T) {
	for round := 0; round < 50; round++ {
		st, _ := newStore(t, state.Spec{Name: "n", Reducer: "add"})
		base := st.Revision()
		var wg sync.WaitGroup
		results := make([]error, 8)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, results[i] = st.Commit(base, []state.Update{{Key: "n", Value: 1.0}})
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range results {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, errs.RevisionConflict):
				t.Fatalf("unexpected error %v", err)
			}
		}
		if wins != 1 || get(t, st.Snapshot(), "n") != 1.0 || st.Revision() != base+1 {
			t.Fatalf("wins=%d n=%v rev=%d", wins, get(t, st.Snapshot(), "n"), st.Revision())
		}
	}
}

func TestForkPublish(t *testing.T) {
	st, _ := newStore(t, state.Spec{Name: "n", Reducer: "add"})
	f := st.Fork()
	commit(t, f, state.Update{Key: "n", Value: 1.0})
	commit(t, f, state.Update{Key: "n", Value: 1.0})
	if get(t, st.Snapshot(), "n") != nil {
		t.Fatal("fork leaked before publish")
	}
	if err := st.Publish(f); err != nil {
		t.Fatal(err)
	}
	if get(t, st.Snapshot(), "n") != 2.0 || st.Revision() != 2 {
		t.Fatalf("after publish n=%v rev=%d", get(t, st.Snapshot(), "n"), st.Revision())
	}
	// A fork whose parent moved cannot publish; one with no commits can.
	f2 := st.Fork()
	idle := st.Fork()
	commit(t, f2, state.Update{Key: "n", Value: 1.0})
	commit(t, st, state.Update{Key: "n", Value: 10.0})
	if err := st.Publish(f2); !errors.Is(err, errs.RevisionConflict) {
		t.Fatalf("err = %v", err)
	}
	if err := st.Publish(idle); err != nil {
		t.Fatal(err)
	}
	if get(t, st.Snapshot(), "n") != 12.0 {
		t.Fatalf("n = %v", get(t, st.Snapshot(), "n"))
	}
}

func TestManyKeys(t *testing.T) {
	for _, n := range []int{1, 31, 32, 33, 1024, 1025, 40000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			specs := make([]state.Spec, n)
			for i := range specs {
				specs[i] = state.Spec{Name: "k" + strconv.Itoa(i), Reducer: "add"}
			}
			st, reg := newStore(t, specs...)
			old := st.Snapshot()
			for i := 0; i < n; i += 1 + n/97 {
				commit(t, st, state.Update{Key: "k" + strconv.Itoa(i), Value: float64(i + 1)})
			}
			snap := st.Snapshot()
			for i, k := range reg.Keys() {
				want := any(nil)
				if i%(1+n/97) == 0 {
					want = float64(i + 1)
				}
				if got := snap.Get(k); got != want {
					t.Fatalf("key %d = %v, want %v", i, got, want)
				}
				if old.Get(k) != nil {
					t.Fatalf("key %d leaked into revision 0", i)
				}
			}
		})
	}
}

func TestSeedMisfits(t *testing.T) {
	var keys []*state.Key
	keys = append(keys, mustKey(t, state.Spec{Name: "a", Scope: state.ScopeThread, Schema: schema.MustCompile(map[string]any{"type": "string"})}))
	keys = append(keys, mustKey(t, state.Spec{Name: "b", Scope: state.ScopeThread, Default: 5.0}))
	reg, err := state.NewRegistry(keys)
	if err != nil {
		t.Fatal(err)
	}
	st, misfits := state.NewStore(reg, map[string]any{"a": 3.0, "b": 7.0, "gone": true})
	if len(misfits) != 1 || misfits[0].Key != "a" || misfits[0].Value != 3.0 {
		t.Fatalf("misfits = %+v", misfits)
	}
	s := st.Snapshot()
	if get(t, s, "a") != nil || get(t, s, "b") != 7.0 {
		t.Fatalf("a=%v b=%v", get(t, s, "a"), get(t, s, "b"))
	}
	vals := s.Values(func(k *state.Key) bool { return k.Scope == state.ScopeThread })
	if len(vals) != 1 || vals["b"] != 7.0 {
		t.Fatalf("values = %v", vals)
	}
}

func TestKeySpecErrors(t *testing.T) {
	tests := []struct {
		name string
		spec state.Spec
		want string
	}{
		{"bad name", state.Spec{Name: "Guard Calls"}, "not valid"},
		{"bad reducer", state.Spec{Name: "a", Reducer: "sum"}, "reducer \"sum\""},
		{"default misfit", state.Spec{Name: "a", Default: "x", Schema: schema.MustCompile(map[string]any{"type": "integer"})}, "default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := state.NewKey(tc.spec, "p", errs.Pos{File: "p.lua", Line: 3})
			if !errors.Is(err, errs.PluginLoadFailed) || !contains(err.Error(), tc.want) || !contains(err.Error(), "p.lua:3") {
				t.Fatalf("err = %v", err)
			}
		})
	}
	a := mustKey(t, state.Spec{Name: "dup"})
	b, _ := state.NewKey(state.Spec{Name: "dup"}, "other", errs.Pos{File: "o.lua", Line: 9})
	_, err := state.NewRegistry([]*state.Key{a, b})
	if !errors.Is(err, errs.KeyAlreadyRegistered) || !contains(err.Error(), "o.lua:9") {
		t.Fatalf("err = %v", err)
	}
}

func BenchmarkSnapshotCommit(b *testing.B) {
	for _, n := range []int{10, 1000, 100000} {
		b.Run("keys="+strconv.Itoa(n), func(b *testing.B) {
			// One compiled schema for every key: 100,000 copies of it would
			// only grow the live heap, and with it the collector's work per
			// allocated byte, which is not what this measures.
			num := schema.MustCompile(map[string]any{"type": "number"})
			specs := make([]state.Spec, n)
			for i := range specs {
				specs[i] = state.Spec{Name: "k" + strconv.Itoa(i), Reducer: "add", Schema: num}
			}
			st, reg := newStore(b, specs...)
			seed := make([]state.Update, 0, n)
			for i := 0; i < n; i++ {
				seed = append(seed, state.Update{Key: "k" + strconv.Itoa(i), Value: 1.0})
			}
			commit(b, st, seed...)
			k := reg.Keys()[n/2]
			ups := []state.Update{{Key: k.Name, Value: 1.0}}
			runtime.GC()
			b.ReportAllocs()
			for b.Loop() {
				s := st.Snapshot()
				_ = s.Get(k)
				if _, err := st.Commit(s.Revision(), ups); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestMultiKeyCommitsShareFreshNodes(t *testing.T) {
	const n = 3000
	specs := make([]state.Spec, n)
	for i := range specs {
		specs[i] = state.Spec{Name: "k" + strconv.Itoa(i), Reducer: "add"}
	}
	st, reg := newStore(t, specs...)
	var ups []state.Update
	for i := 0; i < n; i += 7 {
		ups = append(ups, state.Update{Key: "k" + strconv.Itoa(i), Value: float64(i)}, state.Update{Key: "k" + strconv.Itoa(i), Value: 1.0})
	}
	before := st.Snapshot()
	s := commit(t, st, ups...)
	for i, k := range reg.Keys() {
		var want any
		if i%7 == 0 {
			want = float64(i + 1)
		}
		if got := s.Get(k); got != want {
			t.Fatalf("k%d = %v, want %v", i, got, want)
		}
		if before.Has(k) {
			t.Fatalf("k%d leaked into the old snapshot", i)
		}
	}
	if s.Revision() != 1 {
		t.Fatalf("revision %d", s.Revision())
	}
}

// Commits in a deep registry go through the overlay and fold into the trie
// every overlayMax keys: compare every snapshot with a plain map model,
// including resets to nil that must shadow older values.
func TestOverlayMatchesModel(t *testing.T) {
	const n = 5000
	specs := make([]state.Spec, n)
	for i := range specs {
		specs[i] = state.Spec{Name: "k" + strconv.Itoa(i)}
	}
	st, reg := newStore(t, specs...)
	rng := uint64(42)
	next := func(m int) int {
		rng = rng*6364136223846793005 + 1442695040888963407
		return int((rng >> 33) % uint64(m))
	}
	model := map[int]any{}
	type saved struct {
		snap  *state.Snapshot
		model map[int]any
	}
	var history []saved
	for round := 0; round < 400; round++ {
		var ups []state.Update
		touched := map[int]any{}
		for j := 0; j < 1+next(4); j++ {
			i := next(60) * (n / 60) // a few hot keys, far apart in the trie
			var v any = float64(round*10 + j)
			if next(5) == 0 {
				v = nil
			}
			ups = append(ups, state.Update{Key: "k" + strconv.Itoa(i), Value: v})
			touched[i] = v
		}
		commit(t, st, ups...)
		for i, v := range touched {
			if v == nil {
				delete(model, i)
			} else {
				model[i] = v
			}
		}
		cp := map[int]any{}
		for k, v := range model {
			cp[k] = v
		}
		history = append(history, saved{st.Snapshot(), cp})
	}
	for h, s := range history {
		for i := 0; i < n; i += n / 60 {
			if got, want := s.snap.Get(reg.Keys()[i]), s.model[i]; got != want {
				t.Fatalf("snapshot %d key %d = %v, want %v", h, i, got, want)
			}
		}
		if len(s.snap.Values(nil)) != len(s.model) {
			t.Fatalf("snapshot %d has %d values, want %d", h, len(s.snap.Values(nil)), len(s.model))
		}
		size := 0
		for _, v := range s.model {
			b, _ := value.AppendJSON(nil, v)
			size += len(b)
		}
		if s.snap.Size() != size {
			t.Fatalf("snapshot %d: size %d, want %d (the encoded values summed)", h, s.snap.Size(), size)
		}
	}
}
