package replicas_test

import (
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/internal/pgtest"
)

// A call whose save's reply is lost, and whose replica then cannot find
// out whether the save committed (the database stopped answering), must
// not answer "changed nothing; retry it": the save may be in the store.
// The 503 says the outcome is unknown and to read the run first.
func TestSaveOfUnknownOutcomeSaysSo(t *testing.T) {
	var px *pgtest.Proxy
	rs, _ := replicasVia(t, 1, "statement_timeout = \"1s\"\n", "", func(dsn string) string {
		var err error
		if px, err = cluster.Proxy(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(px.Close)
		_, db, _ := strings.Cut(dsn, "dbname=")
		db, _, _ = strings.Cut(db, " ")
		return px.DSN(db)
	})
	a := rs[0]
	t.Cleanup(px.Resume) // before the replica closes, which waits for its calls
	created := a.must("POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "read"}}})
	id, _ := created.body["run_id"].(string)
	phase(a, id, "step_start", nil)
	phase(a, id, "before_inference", map[string]any{"request": map[string]any{}})
	// The save of this call carries the call's id: the proxy cuts its
	// reply, and then answers nothing more.
	px.CutThenStall("call_cut_here")
	got := a.call("POST", "/v1/runs/"+id+"/phases/after_inference",
		map[string]any{"response": map[string]any{"tool_calls": []any{tcall("call_cut_here", "read")}}})
	px.Resume()
	if px.Cuts() != 1 {
		t.Fatalf("the proxy cut %d connections, want 1 (reply %d %s)", px.Cuts(), got.status, got.raw)
	}
	detail, _ := got.body["detail"].(string)
	if got.status != 503 || got.body["code"] != "store_unavailable" || strings.Contains(detail, "changed nothing") ||
		!strings.Contains(detail, "GET the run") {
		t.Fatalf("a save of unknown outcome: %d %s; want 503 store_unavailable saying to read the run first", got.status, got.raw)
	}
}
