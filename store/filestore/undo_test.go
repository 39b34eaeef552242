package filestore

import (
	"context"
	"strings"
	"testing"
)

// A whole save (PutRun) whose directory fsync fails is undone by renaming
// the old base back over the new one; until the directory is fsynced a
// crash may keep the failed save's base (another epoch), which would skip
// the lines appended after it. So the run's next save, a delta appended
// to its log, fsyncs runs/ before it is acknowledged.
func TestAppendAfterAnUndoSyncsTheDirectory(t *testing.T) {
	ctx := context.Background()
	s, rec, _ := openRec(t)
	cp := sampleCheckpoint("r", "t")
	cp.Seq = 1
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	d, next := change(t, cp, 10)
	if err := s.AppendRun(ctx, d); err != nil { // the log exists from here
		t.Fatal(err)
	}
	rec.take()
	// The failed whole save: renamed in, dir fsync fails, renamed back.
	bad := next
	bad.Seq++
	rec.arm("sync-dir")
	if err := s.PutRun(ctx, bad); err == nil {
		t.Fatal("the save did not fail")
	}
	// The retry, restored from the store: a delta on the old base.
	got, ok, err := s.Run(ctx, "r")
	if err != nil || !ok || got.Seq != next.Seq {
		t.Fatalf("after the undo: seq %d ok %v err %v", got.Seq, ok, err)
	}
	rec.take()
	d2, _ := change(t, got, 10)
	if err := s.AppendRun(ctx, d2); err != nil {
		t.Fatal(err)
	}
	ops := rec.take()
	t.Logf("acknowledged append: %q", ops)
	for _, op := range ops {
		if strings.HasPrefix(op, "sync-dir runs") {
			return
		}
	}
	t.Errorf("the append was acknowledged without runs/ being fsynced after the undo rename: %q", ops)
}
