package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/internal/pgtest"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

// openProxied returns a migrated store whose connections go through a
// proxy that can cut them, and a store on the same database that does not.
func openProxied(t *testing.T) (*pgstore.Store, *pgstore.Store, *pgtest.Proxy) {
	t.Helper()
	return openProxiedConns(t, 4)
}

// openProxiedConns is openProxied with a pool of maxConns connections
// for the proxied store.
func openProxiedConns(t *testing.T, maxConns int32) (*pgstore.Store, *pgstore.Store, *pgtest.Proxy) {
	t.Helper()
	ctx := context.Background()
	dsn, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	if _, err := direct.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	_, db, _ := strings.Cut(dsn, "dbname=")
	db, _, _ = strings.Cut(db, " ")
	px, err := cluster.Proxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	s, err := pgstore.Open(ctx, px.DSN(db), pgstore.Options{MaxConns: maxConns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, direct, px
}

// A save whose connection is lost after the database committed it, before
// the reply came, is a success: it is in the store, and a 503 "changed
// nothing" would be false (the retried phase would then find the run past
// it). The store checks what the database holds before it answers.
func TestSaveCommittedButReplyLost(t *testing.T) {
	s, direct, px := openProxied(t)
	cuts := 0
	cutAt := func(marker string) {
		t.Helper()
		if cuts != px.Cuts() {
			t.Fatalf("the proxy cut %d connections, want %d", px.Cuts(), cuts)
		}
		cuts++
		px.CutAt(marker)
	}
	ctx := context.Background()
	cp := run.Checkpoint{RunID: "run_cut", ThreadID: "t", Status: run.Running, Seq: 1, Values: map[string]any{}}
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}

	// A change appended (the usual save).
	cutAt("run_cut")
	err := s.AppendRun(ctx, run.Delta{RunID: "run_cut", Base: 1, Status: run.Running})
	if seq, _, _ := direct.RunSeq(ctx, "run_cut"); seq != 2 {
		t.Fatalf("the cut save did not commit (seq %d): the proxy cut too early (%v)", seq, err)
	}
	if err != nil {
		t.Errorf("append committed, reply lost: %v; want success", err)
	}

	// A whole checkpoint.
	cp.Seq = 3
	cutAt("run_cut")
	err = s.PutRun(ctx, cp)
	if seq, _, _ := direct.RunSeq(ctx, "run_cut"); seq != 3 {
		t.Fatalf("the cut put did not commit (seq %d)", seq)
	}
	if err != nil {
		t.Errorf("put committed, reply lost: %v; want success", err)
	}

	// Another replica's save on the same base, then ours cut before the
	// database ran it: a conflict, not a success.
	if err := direct.AppendRun(ctx, run.Delta{RunID: "run_cut", Base: 3, Status: run.Waiting}); err != nil {
		t.Fatal(err)
	}
	cutAt("run_cut")
	err = s.AppendRun(ctx, run.Delta{RunID: "run_cut", Base: 3, Status: run.Running})
	if !errors.Is(err, errs.RevisionConflict) {
		t.Errorf("a save that lost to another replica's, reply lost: %v; want revision_conflict", err)
	}
	if px.Cuts() != cuts {
		t.Fatalf("the proxy cut %d connections, want %d", px.Cuts(), cuts)
	}
}

// A save whose reply was lost is settled on another connection of the
// pool, so the lost one must be given back first: with every connection
// of the pool taken (one here; under a network failure, each by a save
// of its own), the check would otherwise wait for itself until its
// deadline and answer "cannot be told" for a save that committed.
func TestSettleWithEveryConnectionTaken(t *testing.T) {
	s, direct, px := openProxiedConns(t, 1)
	ctx := context.Background()
	cp := run.Checkpoint{RunID: "run_one", ThreadID: "t", Status: run.Running, Seq: 1, Values: map[string]any{}}
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		save func() error
		seq  uint64
	}{
		{"append", func() error { return s.AppendRun(ctx, run.Delta{RunID: "run_one", Base: 1, Status: run.Running}) }, 2},
		{"put", func() error { cp.Seq = 3; return s.PutRun(ctx, cp) }, 3},
	} {
		cuts := px.Cuts()
		px.CutAt("run_one")
		start := time.Now()
		err := tc.save()
		took := time.Since(start)
		if px.Cuts() != cuts+1 {
			t.Fatalf("%s: the proxy did not cut the save", tc.name)
		}
		if seq, _, _ := direct.RunSeq(ctx, "run_one"); seq != tc.seq {
			t.Fatalf("%s: the cut save did not commit (seq %d)", tc.name, seq)
		}
		if err != nil {
			t.Errorf("%s committed, reply lost, one connection: %v (after %v); want success", tc.name, err, took)
		}
		if took > 5*time.Second {
			t.Errorf("%s: settling took %v", tc.name, took)
		}
	}
}

// A thread save whose reply was lost after the database committed it is a
// success, with the revision it committed at; one that lost to another
// replica's save on the same base is a conflict, not a success nor a 503.
func TestThreadSaveCommittedButReplyLost(t *testing.T) {
	s, direct, px := openProxied(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		base uint64 // the revision saved on (0: a new thread)
	}{{"insert", 0}, {"update", 1}} {
		th := run.Thread{ID: "thread_cut", Values: map[string]any{"n": tc.name}}
		if tc.base != 0 {
			got, _, err := direct.Thread(ctx, "thread_cut")
			if err != nil {
				t.Fatal(err)
			}
			th.Revision = got.Revision
		}
		cuts := px.Cuts()
		px.CutAt("thread_cut")
		rev, err := s.PutThread(ctx, th)
		if px.Cuts() != cuts+1 {
			t.Fatalf("%s: the proxy did not cut the save", tc.name)
		}
		stored, ok, _ := direct.Thread(ctx, "thread_cut")
		if !ok || stored.Values["n"] != tc.name {
			t.Fatalf("%s: the cut save did not commit (%v): the proxy cut too early (%v)", tc.name, stored.Values, err)
		}
		if err != nil {
			t.Errorf("%s committed, reply lost: %v; want success", tc.name, err)
		} else if rev != stored.Revision {
			t.Errorf("%s: revision %d, stored %d", tc.name, rev, stored.Revision)
		}
	}

	// Another replica's save on the same base, then ours cut.
	base, _, err := direct.Thread(ctx, "thread_cut")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := direct.PutThread(ctx, base); err != nil {
		t.Fatal(err)
	}
	px.CutAt("thread_cut")
	if _, err := s.PutThread(ctx, base); !errors.Is(err, errs.RevisionConflict) {
		t.Errorf("a thread save that lost to another replica's, reply lost: %v; want revision_conflict", err)
	}
	// A new thread that another replica made first.
	if _, err := direct.PutThread(ctx, run.Thread{ID: "thread_cut2"}); err != nil {
		t.Fatal(err)
	}
	px.CutAt("thread_cut2")
	if _, err := s.PutThread(ctx, run.Thread{ID: "thread_cut2"}); !errors.Is(err, errs.RevisionConflict) {
		t.Errorf("a new thread another replica made first, reply lost: %v; want revision_conflict", err)
	}
}

// Finishing a run is one transaction (the thread written, the run
// forgotten). Its COMMIT's reply lost after the database committed it is
// a success; a statement of it cut before COMMIT changed nothing (503),
// unless another replica's save on the same base won: a conflict. The
// pool has one connection, so settling must give the lost one back.
func TestFinishRunReplyLost(t *testing.T) {
	s, direct, px := openProxiedConns(t, 1)
	ctx := context.Background()
	start := func(id string) run.Thread {
		t.Helper()
		cp := run.Checkpoint{RunID: id, ThreadID: "th_" + id, Status: run.Running, Seq: 1, Values: map[string]any{}}
		if err := direct.PutRun(ctx, cp); err != nil {
			t.Fatal(err)
		}
		th := run.Thread{ID: "th_" + id, Values: map[string]any{"v": "before"}}
		rev, err := direct.PutThread(ctx, th)
		if err != nil {
			t.Fatal(err)
		}
		th.Revision, th.Values = rev, map[string]any{"v": id}
		return th
	}
	finish := func(th run.Thread, id, marker string) (uint64, error) {
		t.Helper()
		cuts := px.Cuts()
		// A connection of the pool first, so that the marker ("commit")
		// cuts the finish and not the session setup of a new connection.
		if _, _, err := s.RunSeq(ctx, id); err != nil {
			t.Fatal(err)
		}
		px.CutAt(marker)
		rev, err := s.FinishRun(ctx, th, id, 1)
		if px.Cuts() != cuts+1 {
			t.Fatalf("%s: the proxy did not cut at %q (%v)", id, marker, err)
		}
		return rev, err
	}

	// COMMIT ran, its reply lost.
	th := start("run_fin")
	rev, err := finish(th, "run_fin", "commit")
	stored, _, _ := direct.Thread(ctx, th.ID)
	if _, inStore, _ := direct.RunSeq(ctx, "run_fin"); inStore || stored.Values["v"] != "run_fin" {
		t.Fatalf("the cut finish did not commit (run stored %v, thread %v): the proxy cut too early (%v)", inStore, stored.Values, err)
	}
	if err != nil {
		t.Errorf("finish committed, COMMIT's reply lost: %v; want success", err)
	} else if rev != stored.Revision {
		t.Errorf("finish: revision %d, stored %d", rev, stored.Revision)
	}

	// The thread's write cut, nothing else in the way: nothing committed.
	th = start("run_lost")
	_, err = finish(th, "run_lost", "th_run_lost")
	if _, inStore, _ := direct.RunSeq(ctx, "run_lost"); !inStore {
		t.Fatal("a finish cut before COMMIT forgot the run")
	}
	if err == nil || errors.Is(err, errs.RevisionConflict) {
		t.Errorf("finish cut before COMMIT: %v; want unavailable", err)
	}

	// Another replica saved the thread, then the run, on the same bases.
	for _, tc := range []struct{ id, marker string }{{"run_thr", "th_run_thr"}, {"run_seq", "run_seq"}} {
		th := start(tc.id)
		if tc.id == "run_thr" {
			if _, err := direct.PutThread(ctx, run.Thread{ID: th.ID, Revision: th.Revision}); err != nil {
				t.Fatal(err)
			}
		} else if err := direct.AppendRun(ctx, run.Delta{RunID: tc.id, Base: 1, Status: run.Running}); err != nil {
			t.Fatal(err)
		}
		if _, err := finish(th, tc.id, tc.marker); !errors.Is(err, errs.RevisionConflict) {
			t.Errorf("%s: a finish that lost to another replica's save, reply lost: %v; want revision_conflict", tc.id, err)
		}
	}
}

// A run forgotten whose reply was lost is forgotten: the error said "the
// store still has the run", so the sidecar kept it as not deleted, and
// the client's retried DELETE found no run (404) where the first one had
// deleted it, and the run's end was never journaled.
func TestDeleteRunReplyLost(t *testing.T) {
	s, direct, px := openProxied(t)
	ctx := context.Background()
	cp := run.Checkpoint{RunID: "run_gone", ThreadID: "t", Status: run.Running, Seq: 1, Values: map[string]any{}}
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendRun(ctx, run.Delta{RunID: "run_gone", Base: 1, Status: run.Running}); err != nil {
		t.Fatal(err)
	}
	px.CutAt("run_gone")
	err := s.DeleteRun(ctx, "run_gone")
	if px.Cuts() != 1 {
		t.Fatalf("the proxy cut %d connections, want 1", px.Cuts())
	}
	if _, stored, _ := direct.RunSeq(ctx, "run_gone"); stored {
		t.Fatalf("the cut delete did not commit: the proxy cut too early (%v)", err)
	}
	if err != nil {
		t.Errorf("delete committed, reply lost: %v; want success", err)
	}
	if _, found, _ := direct.Run(ctx, "run_gone"); found {
		t.Error("the run's changes outlived it")
	}
}

// DeleteRunAt forgets a run only at the save its caller holds; a reply
// lost after it did is a success all the same.
func TestDeleteRunAt(t *testing.T) {
	s, direct, px := openProxied(t)
	ctx := context.Background()
	cp := run.Checkpoint{RunID: "run_at", ThreadID: "t", Status: run.Running, Seq: 1, Values: map[string]any{}}
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendRun(ctx, run.Delta{RunID: "run_at", Base: 1, Status: run.Running}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRunAt(ctx, "run_at", 1); !errors.Is(err, errs.RevisionConflict) {
		t.Fatalf("a delete at save 1 of a run at save 2: %v, want revision_conflict", err)
	}
	if _, stored, _ := direct.RunSeq(ctx, "run_at"); !stored {
		t.Fatal("a refused delete forgot the run")
	}
	px.CutAt("run_at")
	err := s.DeleteRunAt(ctx, "run_at", 2)
	if px.Cuts() != 1 {
		t.Fatalf("the proxy cut %d connections, want 1", px.Cuts())
	}
	if _, stored, _ := direct.RunSeq(ctx, "run_at"); stored {
		t.Fatalf("the cut delete did not commit (%v)", err)
	}
	if err != nil {
		t.Errorf("delete committed, reply lost: %v; want success", err)
	}
	if err := s.DeleteRunAt(ctx, "run_at", 2); err != nil {
		t.Errorf("a delete of a run that is gone: %v", err)
	}
}

// A journal batch written whose reply was lost is written: reported
// lost, its runs would be left out of replay and verify from its first
// record on, though every record is there.
func TestJournalBatchReplyLost(t *testing.T) {
	s, direct, px := openProxied(t)
	ctx := context.Background()
	px.CutAt("stream_cut")
	err := s.WriteLines(ctx, "stream_cut", [][]byte{[]byte("one"), []byte("two")})
	if px.Cuts() != 1 {
		t.Fatalf("the proxy cut %d connections, want 1", px.Cuts())
	}
	n, qerr := direct.Exec(ctx, "SELECT 1 FROM awaken_journal WHERE stream = 'stream_cut'")
	if qerr != nil {
		t.Fatal(qerr)
	}
	if n != 2 {
		t.Fatalf("the cut batch left %d lines, want 2: the proxy cut too early (%v)", n, err)
	}
	if err != nil {
		t.Errorf("batch written, reply lost: %v; want success", err)
	}
}
