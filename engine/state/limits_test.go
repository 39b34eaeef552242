package state_test

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// limitedStore opens a store over specs (each declared by plugin "p") with
// the given limits.
func limitedStore(t testing.TB, lim state.Limits, seed map[string]any, specs ...state.Spec) (*state.Store, *state.Registry) {
	t.Helper()
	var keys []*state.Key
	for _, s := range specs {
		k, err := state.NewKey(s, "p", errs.Pos{})
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	reg, err := state.NewRegistry(keys)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := state.Open(reg, seed, 0, lim)
	if err != nil {
		t.Fatal(err)
	}
	return st, reg
}

// encodedSize is the length of v's JSON encoding.
func encodedSize(t testing.TB, v any) int {
	b, err := value.AppendJSON(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func wantTooLarge(t *testing.T, err error, key, plugin, limit string) {
	t.Helper()
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.StateTooLarge {
		t.Fatalf("err = %v, want state_too_large", err)
	}
	if e.Key != key || e.Plugin != plugin || !strings.Contains(e.Msg, limit) || !strings.Contains(e.Msg, "awaken.toml") {
		t.Fatalf("the error must name key %q, plugin %q and %s, and say what to do: %v", key, plugin, limit, err)
	}
}

func TestValueLimit(t *testing.T) {
	lim := state.Limits{MaxValue: 1000, MaxState: 1 << 20}
	st, _ := limitedStore(t, lim, nil, state.Spec{Name: "log", Reducer: "append"}, state.Spec{Name: "other"})
	item := strings.Repeat("x", 300)
	var last *state.Snapshot
	for i := 0; ; i++ {
		s, err := st.Commit(st.Revision(), []state.Update{{Key: "log", Value: item, Plugin: "writer"}})
		if err != nil {
			if i != 3 { // [300+2 quoted] x3 + commas + brackets = 910 bytes; the 4th passes 1000
				t.Fatalf("failed after %d appends, want 3: %v", i, err)
			}
			wantTooLarge(t, err, "log", "writer", "max_value_size")
			break
		}
		last = s
	}
	if st.Snapshot() != last || len(st.Snapshot().Get(mustKeyIn(t, st, "log")).([]any)) != 3 {
		t.Fatal("a refused commit changed the store")
	}
	if got, want := st.Snapshot().Size(), encodedSize(t, last.Values(nil)["log"]); got != want {
		t.Fatalf("size %d, want %d", got, want)
	}
	// A replace past the limit is refused too, and one that shrinks the
	// value is not.
	if _, err := st.Commit(st.Revision(), []state.Update{{Key: "other", Value: strings.Repeat("y", 1001), Plugin: "w2"}}); errs.CodeOf(err) != errs.StateTooLarge {
		t.Fatalf("err = %v", err)
	}
	commit(t, st, state.Update{Key: "other", Value: "small"})
}

func mustKeyIn(t *testing.T, st *state.Store, name string) *state.Key {
	k, ok := st.Snapshot().Registry().Key(name)
	if !ok {
		t.Fatalf("no key %q", name)
	}
	return k
}

func TestStateLimit(t *testing.T) {
	lim := state.Limits{MaxValue: 1000, MaxState: 2500}
	var specs []state.Spec
	for i := range 4 {
		specs = append(specs, state.Spec{Name: "k" + strconv.Itoa(i)})
	}
	specs = append(specs, state.Spec{Name: "__runtime.book", Trusted: true})
	st, _ := limitedStore(t, lim, nil, specs...)
	v := strings.Repeat("x", 798) // 800 bytes quoted
	commit(t, st, state.Update{Key: "k0", Value: v}, state.Update{Key: "k1", Value: v})
	rev := st.Revision()
	_, err := st.Commit(rev, []state.Update{{Key: "k2", Value: "small", Plugin: "a"}, {Key: "k3", Value: v + strings.Repeat("x", 100), Plugin: "b"}})
	wantTooLarge(t, err, "k3", "b", "max_state_size")
	if st.Revision() != rev || st.Snapshot().Size() != 1600 {
		t.Fatalf("a refused commit changed the store: rev %d size %d", st.Revision(), st.Snapshot().Size())
	}
	// Shrinking a key makes room.
	commit(t, st, state.Update{Key: "k0", Value: nil}, state.Update{Key: "k3", Value: v})
	if st.Snapshot().Size() != 1600 {
		t.Fatalf("size %d, want 1600", st.Snapshot().Size())
	}
	// The runtime's own keys may pass max_value_size, but they count in
	// the state.
	if _, err := st.Commit(st.Revision(), []state.Update{{Key: "__runtime.book", Value: strings.Repeat("r", 1200), Plugin: "runtime"}}); errs.CodeOf(err) != errs.StateTooLarge {
		t.Fatalf("a trusted value past the state limit: %v", err)
	}
	commit(t, st, state.Update{Key: "__runtime.book", Value: strings.Repeat("r", 850)})
	if st.Snapshot().Size() != 2452 {
		t.Fatalf("size %d, want 2452", st.Snapshot().Size())
	}
}

// TestLimitsOnManyKeys runs the limits on a registry deep enough for the
// overlay, where sizes are kept in the overlay and in the trie.
func TestLimitsOnManyKeys(t *testing.T) {
	const n = 500
	specs := make([]state.Spec, n)
	for i := range specs {
		specs[i] = state.Spec{Name: "k" + strconv.Itoa(i)}
	}
	st, _ := limitedStore(t, state.Limits{MaxValue: 100, MaxState: 100 * 40}, nil, specs...)
	v := strings.Repeat("z", 98)
	for i := range 40 {
		commit(t, st, state.Update{Key: "k" + strconv.Itoa(i*7), Value: v})
	}
	if _, err := st.Commit(st.Revision(), []state.Update{{Key: "k499", Value: "a"}}); errs.CodeOf(err) != errs.StateTooLarge {
		t.Fatalf("err = %v", err)
	}
	for i := range 40 {
		commit(t, st, state.Update{Key: "k" + strconv.Itoa(i*7), Value: nil})
		commit(t, st, state.Update{Key: "k" + strconv.Itoa(i*7+1), Value: v})
	}
	if st.Snapshot().Size() != 100*40 {
		t.Fatalf("size %d", st.Snapshot().Size())
	}
}

func TestOpenRefusesStoredStatePastTheLimits(t *testing.T) {
	specs := []state.Spec{{Name: "a"}, {Name: "b"}}
	reg, err := state.NewRegistry([]*state.Key{
		must(state.NewKey(specs[0], "pa", errs.Pos{})), must(state.NewKey(specs[1], "pb", errs.Pos{}))})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 2000)
	tests := []struct {
		name   string
		seed   map[string]any
		lim    state.Limits
		key    string
		plugin string
		limit  string
	}{
		{"a value", map[string]any{"a": "ok", "b": big}, state.Limits{MaxValue: 1000, MaxState: 1 << 20}, "b", "pb", "max_value_size"},
		{"the state", map[string]any{"a": big, "b": big}, state.Limits{MaxValue: 1 << 20, MaxState: 3000}, "b", "pb", "max_state_size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _, err := state.Open(reg, tc.seed, 7, tc.lim)
			if st != nil {
				t.Fatal("a store was made")
			}
			wantTooLarge(t, err, tc.key, tc.plugin, tc.limit)
			if !strings.Contains(err.Error(), "stored") {
				t.Fatalf("the error must say the stored state is too large: %v", err)
			}
		})
	}
	// NewStore cannot fail: the value is a misfit, kept aside.
	st, misfits := state.NewStore(reg, map[string]any{"a": "ok", "b": strings.Repeat("x", 2<<20)})
	if len(misfits) != 1 || misfits[0].Key != "b" || errs.CodeOf(misfits[0].Err) != errs.StateTooLarge || st.Snapshot().Size() != 4 {
		t.Fatalf("misfits %v, size %d", misfits, st.Snapshot().Size())
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestLazyValues(t *testing.T) {
	st, reg := limitedStore(t, state.Limits{MaxValue: 10, MaxState: 1000}, nil,
		state.Spec{Name: "__runtime.calls", Trusted: true}, state.Spec{Name: "other"})
	var builds atomic.Int32
	m := map[string]any{"c1": strings.Repeat("v", 20)}
	lazy := state.NewLazy(encodedSize(t, m), func() any { builds.Add(1); return m })
	commit(t, st, state.Update{Key: "__runtime.calls", Value: lazy})
	commit(t, st, state.Update{Key: "other", Value: 1.0})
	k, _ := reg.Key("__runtime.calls")
	snap := st.Snapshot()
	if builds.Load() != 0 || snap.Raw(k) != lazy || snap.Size() != encodedSize(t, m)+1 {
		t.Fatalf("committing built the lazy value (%d builds) or lost its size (%d)", builds.Load(), snap.Size())
	}
	if got := snap.Get(k).(map[string]any); got["c1"] != m["c1"] || snap.Values(nil)["__runtime.calls"] == nil || builds.Load() != 1 {
		t.Fatalf("Get = %v after %d builds", got, builds.Load())
	}
	// Its size counts against the state.
	big := state.NewLazy(2000, func() any { return map[string]any{} })
	if _, err := st.Commit(st.Revision(), []state.Update{{Key: "__runtime.calls", Value: big, Plugin: "runtime"}}); errs.CodeOf(err) != errs.StateTooLarge {
		t.Fatalf("err = %v", err)
	}
}

// TestAppendSizeIsExact: an append measures only the items it adds; the
// size it derives must be the length of the whole list encoded.
func TestAppendSizeIsExact(t *testing.T) {
	st, reg := limitedStore(t, state.Limits{}, map[string]any{"seeded": map[string]any{}},
		state.Spec{Name: "plain", Reducer: "append"},
		state.Spec{Name: "defaulted", Reducer: "append", Default: []any{1.0, "two"}},
		state.Spec{Name: "seeded", Reducer: "append"})
	steps := [][]state.Update{
		{{Key: "plain", Value: "a"}},
		{{Key: "plain", Value: []any{"b", map[string]any{"c": "<d>"}}}, {Key: "plain", Value: 3.5}},
		{{Key: "plain", Value: []any{}}},
		{{Key: "defaulted", Value: []any{}}},
		{{Key: "defaulted", Value: nil}},
		{{Key: "seeded", Value: []any{}}},
		{{Key: "seeded", Value: "x"}, {Key: "defaulted", Value: []any{[]any{}, "\u2028"}}},
	}
	for i, ups := range steps {
		snap := commit(t, st, ups...)
		total := 0
		for _, k := range reg.Keys() {
			if !snap.Has(k) {
				continue
			}
			want := encodedSize(t, snap.Get(k))
			if snap.SizeOf(k) != want {
				t.Fatalf("step %d: %s = %v: size %d, want %d", i, k.Name, snap.Get(k), snap.SizeOf(k), want)
			}
			total += want
		}
		if snap.Size() != total {
			t.Fatalf("step %d: size %d, want %d", i, snap.Size(), total)
		}
	}
}

// BenchmarkCommitBesideLargeState commits one small key next to 15 MB of
// state (15 keys of 1 MB): a commit measures the key it touches, never the
// rest of the state, so it costs what a commit next to a small state does.
func BenchmarkCommitBesideLargeState(b *testing.B) {
	specs := []state.Spec{{Name: "small", Reducer: "add"}}
	seed := map[string]any{}
	for i := range 15 {
		name := "big" + strconv.Itoa(i)
		specs = append(specs, state.Spec{Name: name})
		seed[name] = strings.Repeat("x", 1_000_000)
	}
	var keys []*state.Key
	for _, s := range specs {
		keys = append(keys, mustKey(b, s))
	}
	reg, err := state.NewRegistry(keys)
	if err != nil {
		b.Fatal(err)
	}
	st, _, err := state.Open(reg, seed, 0, state.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	ups := []state.Update{{Key: "small", Value: 1.0}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Commit(st.Revision(), ups); err != nil {
			b.Fatal(err)
		}
	}
}
