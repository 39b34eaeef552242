package replicas_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// One run whose row in the database does not decode (a hand edit, a bug)
// is that run's problem: calls on it answer with a code that says so,
// not 503 store_unavailable ("retry it", which never helps), and the
// replica stays ready. Marked unready by each call on it, every replica
// would drop out of its load balancer while a client polls that run.
func TestCorruptRunKeepsTheReplicaReady(t *testing.T) {
	rs := replicas(t, 2)
	a, b := rs[0], rs[1]
	ctx := context.Background()
	created := a.must("POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "read"}}})
	id, _ := created.body["run_id"].(string)
	phase(a, id, "step_start", nil)
	conn, err := pgx.Connect(ctx, os.Getenv("AWAKEN_TEST_PG"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "UPDATE awaken_runs SET body = 'not json' WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	// The other replica, which does not hold the run, reads it.
	got := b.call("GET", "/v1/runs/"+id, nil)
	if got.status == 503 || got.status/100 == 2 || got.body["code"] != "run_lost" {
		t.Errorf("GET of a run whose row does not decode: %d %s; want run_lost", got.status, got.raw)
	}
	if r := b.call("GET", "/readyz", nil); r.status != 200 {
		t.Errorf("one corrupt run made the replica unready: %d %s", r.status, r.raw)
	}
}
