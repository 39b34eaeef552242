package filestore

import (
	"context"
	"sync"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/run"
)

// Two Stores on one directory stand for two processes on one store (a
// sidecar and `awaken-lua run --thread`, or the `hook --local` processes
// of parallel tool calls). A save one of them made since the other read a
// run must make the other's save on the old base a revision conflict, not
// a second line on that base, which corrupts the log (read back, it is set
// aside and the run is lost).
func TestTwoProcessesOneRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	cp := sampleCheckpoint("r", "t")
	cp.Seq = 1
	if err := a.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		second *Store
	}{{"compacted by the other", a}, {"appended by the other", b}} {
		t.Run(tc.name, func(t *testing.T) {
			// Each process restores the run (and keeps what it read).
			ra, _ := readRun(t, a, "r")
			readRun(t, b, "r")
			d, next := change(t, ra, 10)
			if err := a.AppendRun(ctx, d); err != nil {
				t.Fatal(err)
			}
			if tc.second == a { // a also rewrites the base: b's view is of an old one
				if _, err := a.compact(ctx, "r", a.path(runsDir, "r")); err != nil {
					t.Fatal(err)
				}
			}
			d2, _ := change(t, ra, 20) // b's save, computed on the base a changed
			if err := b.AppendRun(ctx, d2); errs.CodeOf(err) != errs.RevisionConflict {
				t.Fatalf("a save on a base another process saved past: %v, want revision_conflict", err)
			}
			c := open(t, dir)
			got, ok := readRun(t, c, "r")
			if !ok || jsonOf(t, got) != jsonOf(t, next) {
				t.Fatalf("read back: ok %v\n got %s\nwant %s", ok, jsonOf(t, got), jsonOf(t, next))
			}
			if p := c.Problems(); len(p) != 0 {
				t.Fatalf("problems: %v", p)
			}
		})
	}
}

// Of many saves of one thread on one base, spread over two processes,
// exactly one wins.
func TestTwoProcessesOneThread(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stores := []*Store{open(t, dir), open(t, dir)}
	base, err := stores[0].PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 32
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := stores[i%2].PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{"by": float64(i)}, Revision: base})
			errc <- err
		})
	}
	waitAll(t, &wg)
	close(errc)
	wins := 0
	for err := range errc {
		switch {
		case err == nil:
			wins++
		case errs.CodeOf(err) != errs.RevisionConflict:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d saves won on one base across two processes, want 1", wins)
	}
}
