package run_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/run"
)

// storeOp is one step of a memory store script: "put A" saves thread A at
// its current revision, "wait A" saves it waiting, "free A" saves it no
// longer waiting, "get A" reads it, "saverun r A" and "delrun r" save and
// delete run r of thread A.
type storeOp string

func applyOps(t *testing.T, s *run.MemoryStore, ops []storeOp) {
	t.Helper()
	ctx := context.Background()
	for _, op := range ops {
		f := strings.Fields(string(op))
		switch f[0] {
		case "put", "wait", "free":
			th, _, err := s.Thread(ctx, f[1])
			if err != nil {
				t.Fatal(err)
			}
			th.ID = f[1]
			switch f[0] {
			case "wait":
				th.Waiting = "run-" + f[1]
			case "free":
				th.Waiting = ""
			}
			if _, err := s.PutThread(ctx, th); err != nil {
				t.Fatalf("%s: %v", op, err)
			}
		case "get":
			if _, _, err := s.Thread(ctx, f[1]); err != nil {
				t.Fatal(err)
			}
		case "saverun":
			if err := s.PutRun(ctx, run.Checkpoint{RunID: f[1], ThreadID: f[2]}); err != nil {
				t.Fatal(err)
			}
		case "delrun":
			if err := s.DeleteRun(ctx, f[1]); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("bad op %q", op)
		}
	}
}

// kept lists the ids among candidates that the store still has.
func kept(t *testing.T, s *run.MemoryStore, candidates ...string) []string {
	t.Helper()
	var out []string
	for _, id := range candidates {
		if _, ok, _ := s.Thread(context.Background(), id); ok {
			out = append(out, id)
		}
	}
	return out
}

func TestMemoryStoreEviction(t *testing.T) {
	all := []string{"A", "B", "C", "D", "E"}
	for _, tc := range []struct {
		name string
		max  int
		ops  []storeOp
		want []string // the threads left, among all
	}{
		{"under the bound", 3, []storeOp{"put A", "put B", "put C"}, []string{"A", "B", "C"}},
		{"oldest goes first", 3, []storeOp{"put A", "put B", "put C", "put D"}, []string{"B", "C", "D"}},
		{"bound honoured", 2, []storeOp{"put A", "put B", "put C", "put D", "put E"}, []string{"D", "E"}},
		{"reading keeps a thread", 3, []storeOp{"put A", "put B", "put C", "get A", "put D"}, []string{"A", "C", "D"}},
		{"saving keeps a thread", 3, []storeOp{"put A", "put B", "put C", "put A", "put D", "put E"}, []string{"A", "D", "E"}},
		{"reading a missing thread adds nothing", 2, []storeOp{"put A", "get X", "put B"}, []string{"A", "B"}},
		{"waiting thread stays", 2, []storeOp{"wait A", "put B", "put C", "put D"}, []string{"A", "D"}},
		{"all waiting exceeds the bound", 2, []storeOp{"wait A", "wait B", "wait C"}, []string{"A", "B", "C"}},
		{"the thread just saved stays", 2, []storeOp{"wait A", "wait B", "put C"}, []string{"A", "B", "C"}},
		{"an evictable thread goes before the bound is exceeded", 2, []storeOp{"wait A", "put B", "wait C"}, []string{"A", "C"}},
		{"a thread no longer waiting is evictable", 2, []storeOp{"wait A", "put B", "free A", "put C", "put D"}, []string{"C", "D"}},
		{"unpinned threads are evicted by the next save", 1, []storeOp{"wait A", "wait B", "free A", "free B", "put C"}, []string{"C"}},
		{"a saved run pins its thread", 2, []storeOp{"put A", "saverun r1 A", "put B", "put C", "put D"}, []string{"A", "D"}},
		{"a saved run pins a thread saved later", 2, []storeOp{"saverun r1 A", "put A", "put B", "put C"}, []string{"A", "C"}},
		{"a deleted run unpins", 2, []storeOp{"put A", "saverun r1 A", "put B", "delrun r1", "put C", "put D"}, []string{"C", "D"}},
		{"two runs pin until both are deleted", 2, []storeOp{"put A", "saverun r1 A", "saverun r2 A", "delrun r1", "put B", "put C"}, []string{"A", "C"}},
		{"a run saved again under another thread moves its pin", 2,
			[]storeOp{"put A", "saverun r1 A", "saverun r1 B", "put B", "put C"}, []string{"B", "C"}},
		{"a waiting thread stays after its run is deleted", 2, []storeOp{"wait A", "saverun r1 A", "delrun r1", "put B", "put C"}, []string{"A", "C"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := run.NewMemoryStore(run.WithMaxThreads(tc.max))
			applyOps(t, s, tc.ops)
			if got := kept(t, s, all...); !slices.Equal(got, tc.want) {
				t.Fatalf("kept %v, want %v", got, tc.want)
			}
			if s.Len() != len(tc.want) {
				t.Fatalf("Len = %d, want %d", s.Len(), len(tc.want))
			}
		})
	}
}

func TestMemoryStoreMaxThreads(t *testing.T) {
	for _, tc := range []struct {
		opts []run.MemoryStoreOption
		want int
	}{
		{nil, run.DefaultMaxThreads},
		{[]run.MemoryStoreOption{run.WithMaxThreads(0)}, run.DefaultMaxThreads},
		{[]run.MemoryStoreOption{run.WithMaxThreads(-3)}, run.DefaultMaxThreads},
		{[]run.MemoryStoreOption{run.WithMaxThreads(7)}, 7},
	} {
		if got := run.NewMemoryStore(tc.opts...).MaxThreads(); got != tc.want {
			t.Errorf("MaxThreads = %d, want %d", got, tc.want)
		}
	}
	if run.DefaultMaxThreads != 10000 {
		t.Fatalf("DefaultMaxThreads = %d", run.DefaultMaxThreads)
	}
	// The default bound holds too.
	s := run.NewMemoryStore()
	ctx := context.Background()
	for i := range run.DefaultMaxThreads + 50 {
		if _, err := s.PutThread(ctx, run.Thread{ID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if s.Len() != run.DefaultMaxThreads {
		t.Fatalf("Len = %d", s.Len())
	}
	if _, ok, _ := s.Thread(ctx, "49"); ok {
		t.Fatal("thread 49 should have been evicted")
	}
	if _, ok, _ := s.Thread(ctx, "50"); !ok {
		t.Fatal("thread 50 should be kept")
	}
}

// TestMemoryStoreRevisionAfterEviction: an evicted thread is absent, so the
// compare-and-swap treats it as revision 0.
func TestMemoryStoreRevisionAfterEviction(t *testing.T) {
	ctx := context.Background()
	s := run.NewMemoryStore(run.WithMaxThreads(1))
	if rev, err := s.PutThread(ctx, run.Thread{ID: "A", Values: map[string]any{"n": 1.0}}); err != nil || rev != 1 {
		t.Fatal(rev, err)
	}
	if rev, err := s.PutThread(ctx, run.Thread{ID: "A", Revision: 1}); err != nil || rev != 2 {
		t.Fatal(rev, err)
	}
	if _, err := s.PutThread(ctx, run.Thread{ID: "B"}); err != nil { // evicts A
		t.Fatal(err)
	}
	// A stale writer (a run that loaded A at revision 2) conflicts.
	_, err := s.PutThread(ctx, run.Thread{ID: "A", Revision: 2})
	if errs.CodeOf(err) != errs.RevisionConflict || !strings.Contains(err.Error(), "max_threads") {
		t.Fatalf("stale save after eviction: %v", err)
	}
	if _, ok, _ := s.Thread(ctx, "A"); ok {
		t.Fatal("a refused save must not store the thread")
	}
	// Saved with revision 0, A is a new thread with fresh state, at a
	// revision no earlier A had.
	rev, err := s.PutThread(ctx, run.Thread{ID: "A"})
	if err != nil || rev <= 2 {
		t.Fatal(rev, err)
	}
	th, _, _ := s.Thread(ctx, "A")
	if th.Values != nil || th.Revision != rev {
		t.Fatalf("re-created thread = %+v", th)
	}
	// Made again and saved up to the revision the old A had, the new A
	// still refuses the old A's stale writer.
	s2 := run.NewMemoryStore(run.WithMaxThreads(1))
	old, _ := s2.PutThread(ctx, run.Thread{ID: "T", Values: map[string]any{"who": "old"}}) // a run loads T here
	if _, err := s2.PutThread(ctx, run.Thread{ID: "U"}); err != nil {                      // evicts T
		t.Fatal(err)
	}
	fresh, _ := s2.PutThread(ctx, run.Thread{ID: "T", Values: map[string]any{"who": "new"}})
	for fresh < old {
		fresh, _ = s2.PutThread(ctx, run.Thread{ID: "T", Revision: fresh, Values: map[string]any{"who": "new"}})
	}
	if _, err := s2.PutThread(ctx, run.Thread{ID: "T", Revision: old, Values: map[string]any{"who": "stale"}}); errs.CodeOf(err) != errs.RevisionConflict {
		t.Fatalf("the stale writer of an evicted thread saved over its successor: %v", err)
	}
	if th, _, _ := s2.Thread(ctx, "T"); th.Values["who"] != "new" {
		t.Fatalf("T = %+v", th)
	}
	// A stale write to a present thread keeps its message.
	_, err = s.PutThread(ctx, run.Thread{ID: "A", Revision: 5})
	if errs.CodeOf(err) != errs.RevisionConflict || !strings.Contains(err.Error(), "was saved by another run") {
		t.Fatalf("stale save: %v", err)
	}
}

// TestMemoryStoreConcurrent runs saves, reads and runs from many goroutines
// (run it with -race) and checks the bound afterwards.
func TestMemoryStoreConcurrent(t *testing.T) {
	const max, workers, rounds = 16, 8, 300
	ctx := context.Background()
	s := run.NewMemoryStore(run.WithMaxThreads(max))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				id := fmt.Sprintf("t%d", (w*rounds+i)%(4*max))
				th, _, err := s.Thread(ctx, id)
				if err != nil {
					t.Error(err)
					return
				}
				th.ID = id
				th.Values = map[string]any{"i": float64(i)}
				th.Waiting = ""
				if i%50 == 0 {
					th.Waiting = "r" + id
				}
				if _, err := s.PutThread(ctx, th); err != nil && errs.CodeOf(err) != errs.RevisionConflict {
					t.Error(err)
					return
				}
				rid := fmt.Sprintf("r%d-%d", w, i)
				if err := s.PutRun(ctx, run.Checkpoint{RunID: rid, ThreadID: id}); err != nil {
					t.Error(err)
				}
				if err := s.DeleteRun(ctx, rid); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	// Free every waiting thread; the next saves bring the store back to
	// its bound.
	for i := range 4 * max {
		id := fmt.Sprintf("t%d", i)
		if th, ok, _ := s.Thread(ctx, id); ok && th.Waiting != "" {
			th.Waiting = ""
			if _, err := s.PutThread(ctx, th); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.PutThread(ctx, run.Thread{ID: "last"}); err != nil {
		t.Fatal(err)
	}
	if s.Len() != max {
		t.Fatalf("Len = %d, want %d", s.Len(), max)
	}
}

// TestWaitingRunSurvivesEviction: a run that waits for a decision keeps its
// thread and its saved run however many other threads come and go, and
// resumes.
func TestWaitingRunSurvivesEviction(t *testing.T) {
	ctx := context.Background()
	store := run.NewMemoryStore(run.WithMaxThreads(2))
	rt := newRuntime(t, []run.Option{run.WithStore(store)},
		gateFn("ask", func(in *plugin.Input) gate.Decision {
			if in.Tool.Resume != nil {
				return gate.Decision{}
			}
			return gate.Decision{Kind: gate.Suspend}
		}))
	sh := newTool("sh", nil)
	res, _ := rt.Run(ctx, run.Request{ThreadID: "W", Model: turns(calls(call("sh", nil))), Tools: []plugin.Tool{sh}})
	if res.Status != run.Waiting {
		t.Fatal(res.Termination)
	}
	for i := range 5 {
		if _, err := rt.Run(ctx, run.Request{ThreadID: fmt.Sprint("other", i), Model: turns(text("ok"))}); err != nil {
			t.Fatal(err)
		}
	}
	if got := kept(t, store, "W", "other3", "other4"); !slices.Equal(got, []string{"W", "other4"}) {
		t.Fatalf("kept %v", got)
	}
	if _, ok, _ := store.Run(ctx, res.RunID); !ok {
		t.Fatal("the waiting run was dropped")
	}
	out, err := rt.ResumeRun(ctx, run.ResumeRequest{RunID: res.RunID, Decisions: []run.ResumeDecision{{Target: "call_1_1", Action: "resume"}},
		Model: turns(text("done")), Tools: []plugin.Tool{sh}})
	if err != nil || out.Status != run.Done || sh.runs.Load() != 1 {
		t.Fatalf("resume: %v %+v", err, out)
	}
	// Done, W is an ordinary thread again: the next save evicts down to
	// the bound.
	if _, err := rt.Run(ctx, run.Request{ThreadID: "next", Model: turns(text("ok"))}); err != nil {
		t.Fatal(err)
	}
	if store.Len() != 2 {
		t.Fatalf("Len = %d", store.Len())
	}
}
