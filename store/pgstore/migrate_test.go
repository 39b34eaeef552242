package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

// A database that an older awaken-lua made (schema version 3: no change
// log, no journal), holding a run saved 300 times, migrates in place: the
// run reads back as saved, takes its next saves as changes, and
// compacts.
func TestMigrateExistingDatabase(t *testing.T) {
	ctx := context.Background()
	dsn, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, f := range []string{"001_init.sql", "002_expiry_claims.sql", "003_bundles.sql"} {
		sql, err := os.ReadFile("migrations/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, string(sql)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE awaken_schema (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
		INSERT INTO awaken_schema (version) VALUES (1), (2), (3)`); err != nil {
		t.Fatal(err)
	}
	cp := run.Checkpoint{RunID: "old", ThreadID: "t", Status: run.Running, Stage: run.StageInferred, Seq: 300,
		Values: map[string]any{"n": 1.0}, Messages: []model.Message{{Role: "user", Content: "hi"}}}
	body, _ := json.Marshal(cp)
	if _, err := conn.Exec(ctx, `INSERT INTO awaken_runs (id, thread_id, seq, status, body) VALUES ('old', 't', 300, 'running', $1)`, body); err != nil {
		t.Fatal(err)
	}

	s, err := pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	applied, err := s.Migrate(ctx)
	if err != nil || !reflect.DeepEqual(applied, []int{4, 5}) {
		t.Fatalf("migrate: %v %v, want [4 5]", applied, err)
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Run(ctx, "old")
	if err != nil || !ok || got.Seq != 300 || got.Values["n"] != 1.0 {
		t.Fatalf("the old run after the migration: %+v %v %v", got, ok, err)
	}
	want := got
	for i := 300; i < 400; i++ {
		d := run.Delta{RunID: "old", Base: uint64(i), Status: run.Running, Stage: run.StageInferred, Step: i,
			MessagesFrom: len(want.Messages), Messages: []model.Message{{Role: "assistant", Content: fmt.Sprint(i)}}, Values: map[string]any{"n": float64(i)}}
		if err := s.AppendRun(ctx, d); err != nil {
			t.Fatalf("save %d: %v", i+1, err)
		}
		if err := want.Apply(d); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err = s.Run(ctx, "old")
	if err != nil || got.Seq != 400 || !reflect.DeepEqual(got.Messages, want.Messages) || got.Values["n"] != 399.0 {
		t.Fatalf("after 100 saves: seq %d, %d messages, n %v: %v", got.Seq, len(got.Messages), got.Values["n"], err)
	}
	n, err := s.Exec(ctx, "SELECT 1 FROM awaken_run_deltas WHERE run_id = 'old'")
	if err != nil || n > 64 {
		t.Fatalf("%d changes kept after a read: the migrated run never compacts (%v)", n, err)
	}
}
