package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

// openWith returns a migrated store with options o on a database of its
// own, and the database's DSN.
func openWith(t *testing.T, o pgstore.Options) (*pgstore.Store, string) {
	t.Helper()
	ctx := context.Background()
	dsn, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.Open(ctx, dsn, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s, dsn
}

// A save that compacts its run gives its connection back first: holding
// it while the compaction waits for another, saves that all compact at
// once (or one, on a pool of one) wait for each other until their
// deadline, and with none, forever.
func TestCompactingSaveHoldsOneConnection(t *testing.T) {
	s, _ := openWith(t, pgstore.Options{MaxConns: 1})
	cp := run.Checkpoint{RunID: "r", ThreadID: "t", Status: run.Running, Stage: run.StageInferred, Seq: 1,
		Values: map[string]any{}, Messages: []model.Message{{Role: "user", Content: "hi"}}}
	if err := s.PutRun(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 300; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		d := run.Delta{RunID: "r", Base: uint64(i), Status: run.Running, Stage: run.StageInferred, Step: i,
			MessagesFrom: i, Messages: []model.Message{{Role: "assistant", Content: fmt.Sprint(i)}}, Values: map[string]any{}}
		err := s.AppendRun(ctx, d)
		expired := ctx.Err() != nil
		cancel()
		if err != nil {
			t.Fatalf("save %d: %v", i+1, err)
		}
		if expired {
			t.Fatalf("save %d waited for a second connection until its deadline", i+1)
		}
	}
	deltas, err := s.Exec(context.Background(), "SELECT 1 FROM awaken_run_deltas WHERE run_id = 'r'")
	if err != nil {
		t.Fatal(err)
	}
	if deltas > 256 {
		t.Fatalf("%d changes after 300 saves: the run was never compacted", deltas)
	}
}
