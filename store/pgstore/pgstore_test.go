package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/internal/pgtest"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

var cluster *pgtest.Cluster

func TestMain(m *testing.M) { pgtest.Main(m, &cluster) }

// open returns a migrated store on a database of its own.
func open(t *testing.T) *pgstore.Store {
	t.Helper()
	ctx := context.Background()
	dsn, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	dsn, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Probe(ctx); err == nil {
		t.Fatal("an unmigrated database is ready")
	}
	applied, err := s.Migrate(ctx)
	if err != nil || len(applied) != pgstore.SchemaVersion() {
		t.Fatalf("first migrate: %v %v", applied, err)
	}
	if again, err := s.Migrate(ctx); err != nil || len(again) != 0 {
		t.Fatalf("second migrate applied %v, %v", again, err)
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestThreadCompareAndSwap(t *testing.T) {
	s, ctx := open(t), context.Background()
	if _, ok, err := s.Thread(ctx, "t"); ok || err != nil {
		t.Fatalf("a missing thread: %v %v", ok, err)
	}
	r1, err := s.PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{"n": 1.0}, Waiting: "run_1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutThread(ctx, run.Thread{ID: "t"}); !errors.Is(err, errs.RevisionConflict) {
		t.Fatalf("a second new thread: %v", err)
	}
	r2, err := s.PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{"n": 2.0}, Revision: r1})
	if err != nil || r2 <= r1 {
		t.Fatalf("save on r1: %d %v", r2, err)
	}
	if _, err := s.PutThread(ctx, run.Thread{ID: "t", Revision: r1}); !errors.Is(err, errs.RevisionConflict) {
		t.Fatalf("a stale save: %v", err)
	}
	th, ok, err := s.Thread(ctx, "t")
	if !ok || err != nil || th.Revision != r2 || th.Values["n"] != 2.0 || th.Waiting != "" {
		t.Fatalf("read back: %+v %v %v", th, ok, err)
	}
}

func TestRunCompareAndSwap(t *testing.T) {
	s, ctx := open(t), context.Background()
	cp := run.Checkpoint{RunID: "r", ThreadID: "t", Status: run.Running, Stage: run.StageInferred, Seq: 1}
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRun(ctx, cp); !errors.Is(err, errs.RevisionConflict) {
		t.Fatalf("a second first save: %v", err)
	}
	cp.Seq, cp.Step = 2, 3
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRun(ctx, cp); !errors.Is(err, errs.RevisionConflict) {
		t.Fatalf("two saves on one base: %v", err)
	}
	got, ok, err := s.Run(ctx, "r")
	if !ok || err != nil || got.Step != 3 || got.Stage != run.StageInferred {
		t.Fatalf("read back: %+v %v %v", got, ok, err)
	}
	if seq, ok, _ := s.RunSeq(ctx, "r"); !ok || seq != 2 {
		t.Fatalf("RunSeq = %d %v", seq, ok)
	}
	if err := s.DeleteRun(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Run(ctx, "r"); ok {
		t.Fatal("a deleted run is still there")
	}
}

// Many writers on one base: exactly one commits.
func TestConcurrentSavesOnOneBase(t *testing.T) {
	s, ctx := open(t), context.Background()
	if err := s.PutRun(ctx, run.Checkpoint{RunID: "r", ThreadID: "t", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	r1, _ := s.PutThread(ctx, run.Thread{ID: "t"})
	var wg sync.WaitGroup
	var mu sync.Mutex
	runs, threads := 0, 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errRun := s.PutRun(ctx, run.Checkpoint{RunID: "r", ThreadID: "t", Seq: 2, Step: i})
			_, errThread := s.PutThread(ctx, run.Thread{ID: "t", Revision: r1})
			mu.Lock()
			defer mu.Unlock()
			if errRun == nil {
				runs++
			} else if !errors.Is(errRun, errs.RevisionConflict) {
				t.Error(errRun)
			}
			if errThread == nil {
				threads++
			} else if !errors.Is(errThread, errs.RevisionConflict) {
				t.Error(errThread)
			}
		}(i)
	}
	wg.Wait()
	if runs != 1 || threads != 1 {
		t.Fatalf("%d run saves and %d thread saves committed on one base", runs, threads)
	}
}

// A run saved as changes on a checkpoint reads back as the session that
// saved it holds it, across compactions, and two changes on one base
// never both commit.
func TestRunLog(t *testing.T) {
	s, ctx := open(t), context.Background()
	var lg run.RunLog = s
	cp := run.Checkpoint{RunID: "r", ThreadID: "t", Status: run.Running, Stage: run.StageInferred, Seq: 1,
		Values: map[string]any{}, Messages: []model.Message{{Role: "user", Content: "hi"}}}
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	want := cp
	for i := 1; i <= 300; i++ {
		d := run.Delta{RunID: "r", Base: uint64(i), Status: run.Running, Stage: run.StageInferred, Step: i,
			MessagesFrom: len(want.Messages), Messages: []model.Message{{Role: "assistant", Content: fmt.Sprint(i)}},
			Values: map[string]any{"n": float64(i)}}
		if err := lg.AppendRun(ctx, d); err != nil {
			t.Fatalf("save %d: %v", i+1, err)
		}
		if err := want.Apply(d); err != nil {
			t.Fatal(err)
		}
		if i == 150 {
			if err := lg.AppendRun(ctx, d); !errors.Is(err, errs.RevisionConflict) {
				t.Fatalf("a second change on one base: %v", err)
			}
		}
	}
	got, ok, err := s.Run(ctx, "r")
	if !ok || err != nil || got.Seq != 301 || got.Step != 300 || len(got.Messages) != 301 || got.Values["n"] != 300.0 {
		t.Fatalf("read back: seq %d step %d %d messages, n %v: %v", got.Seq, got.Step, len(got.Messages), got.Values["n"], err)
	}
	if !reflect.DeepEqual(got.Messages, want.Messages) {
		t.Fatal("the messages differ from the ones saved")
	}
	// A whole save replaces the checkpoint and its changes.
	got.Seq, got.Step = 302, 0
	if err := s.PutRun(ctx, got); err != nil {
		t.Fatal(err)
	}
	again, _, _ := s.Run(ctx, "r")
	if again.Seq != 302 || again.Step != 0 || len(again.Messages) != 301 {
		t.Fatalf("after a whole save: seq %d step %d", again.Seq, again.Step)
	}
}

// A run keeps the working directory its agent reported, whole and through
// its changes; a run saved without one (as before it was kept) reads back
// without one.
func TestRunKeepsCwd(t *testing.T) {
	s, ctx := open(t), context.Background()
	cp := run.Checkpoint{RunID: "r", ThreadID: "t", Status: run.Running, Stage: run.StageInferred, Seq: 1,
		Values: map[string]any{}, Cwd: "/w/a"}
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		t.Helper()
		got, ok, err := s.Run(ctx, "r")
		if !ok || err != nil {
			t.Fatalf("read back: %v %v", ok, err)
		}
		return got.Cwd
	}
	if got := read(); got != "/w/a" {
		t.Fatalf("whole: cwd %q", got)
	}
	for i, cwd := range []string{"/w/b", "", "/w/c"} {
		d := run.Delta{RunID: "r", Base: uint64(i + 1), Status: run.Running, Stage: run.StageInferred, Cwd: cwd}
		if err := s.AppendRun(ctx, d); err != nil {
			t.Fatal(err)
		}
		if got := read(); got != cwd {
			t.Fatalf("change %d: cwd %q, want %q", i, got, cwd)
		}
	}
	cp.Cwd, cp.Seq = "", 5
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "" {
		t.Fatalf("saved without one: cwd %q", got)
	}
}
