package replicas_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A DELETE of a running run decides on the save it holds (the run is in
// the middle of a step: forget it, leave the thread). Another replica's
// save between its check of the run and its delete (a step_end making the
// run wait on an approval, naming it in its thread) must make the
// DELETE a conflict, not forget a run whose client was just told it
// waits. The other replica's save is made here in SQL, on the run's row
// that the DELETE waits for, so the two meet in that order every time.
func TestDeleteLosesToAConcurrentSave(t *testing.T) {
	a := replicas(t, 1)[0]
	ctx := context.Background()
	created := a.must("POST", "/v1/runs", map[string]any{"thread_id": "td", "tools": []any{map[string]any{"name": "deploy"}}})
	id, _ := created.body["run_id"].(string)
	phase(a, id, "step_start", nil)
	phase(a, id, "before_inference", map[string]any{"request": map[string]any{}})

	other, err := pgx.Connect(ctx, os.Getenv("AWAKEN_TEST_PG"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	// Another session watches: one in a transaction sees pg_stat_activity
	// as it was when the transaction first read it.
	watch, err := pgx.Connect(ctx, os.Getenv("AWAKEN_TEST_PG"))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "UPDATE awaken_runs SET seq = seq + 1, updated_at = now() WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan reply, 1)
	go func() { deleted <- a.call("DELETE", "/v1/runs/"+id, nil) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%DELETE FROM awaken_run%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the DELETE never reached the run's row")
		}
		select {
		case del := <-deleted:
			t.Fatalf("the DELETE answered before reaching the run's row: %d %s", del.status, del.raw)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	del := <-deleted
	if del.status != 409 || del.body["code"] != "revision_conflict" {
		t.Errorf("a DELETE decided on the save before another replica's: %d %s; want 409 revision_conflict", del.status, del.raw)
	}
	var stored bool
	if err := other.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM awaken_runs WHERE id = $1)", id).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !stored {
		t.Fatal("the DELETE forgot the run another replica had saved since")
	}
}
