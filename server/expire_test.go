package server

import (
	"testing"
	"time"
)

// expiringLua suspends deploy with a short ticket timeout.
const expiringLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "approve" }
p:tool_gate(function(ctx, call)
  if call.name == "deploy" and not call.resume then
    return awaken.suspend { message = "Deploy?", timeout = "50ms" }
  end
end)
return p
`

// TestSidecarSettlesExpiredApprovals: nobody answers a suspended call, and
// the sidecar settles it by itself once its ticket expires, even after
// the idle run left memory; /metrics counts it apart from cancels.
func TestSidecarSettlesExpiredApprovals(t *testing.T) {
	for _, store := range []string{"memory", "file"} {
		t.Run(store, func(t *testing.T) {
			toml := ""
			if store == "file" {
				toml = "\n[store]\nkind = \"file\"\npath = \"state\"\n"
			}
			sc := newSidecar(t, project(t, toml, map[string]string{"approve.lua": expiringLua}),
				Options{Log: quietLog(), IdleTimeout: 20 * time.Millisecond})
			r := sc.must(201, "POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "deploy"}}})
			id := r.str("run_id")
			sc.must(200, "POST", "/v1/runs/"+id+"/phases/step_start", map[string]any{})
			sc.must(200, "POST", "/v1/runs/"+id+"/phases/before_inference", map[string]any{"request": map[string]any{}})
			sc.must(200, "POST", "/v1/runs/"+id+"/phases/after_inference",
				map[string]any{"response": map[string]any{"tool_calls": []any{map[string]any{"id": "c1", "name": "deploy", "args": map[string]any{}}}}})
			d := sc.must(200, "POST", "/v1/runs/"+id+"/phases/tool_gate", map[string]any{"call": map[string]any{"id": "c1", "name": "deploy"}})
			if d.str("decision") != "suspend" {
				t.Fatalf("gate: %s", d.raw)
			}
			ticket := d.body["ticket"].(map[string]any)
			if ticket["on_timeout"] != "cancel" || ticket["expires_at"] == nil {
				t.Fatalf("the ticket must say when and how it expires: %v", ticket)
			}
			if e := sc.must(200, "POST", "/v1/runs/"+id+"/phases/step_end", map[string]any{}); e.str("termination") != "suspended" {
				t.Fatalf("step_end: %s", e.raw)
			}
			waitFor(t, func() bool { return sc.metricValue("awaken_tickets_expired_total") == 1 })
			g := sc.must(200, "GET", "/v1/runs/"+id, nil)
			if g.str("status") != "running" {
				t.Fatalf("after the expiry the run goes on (the client ends the step): %s", g.raw)
			}
			calls := g.body["state"].(map[string]any)["__runtime.tool_calls"].(map[string]any)
			if c := calls["c1"].(map[string]any); c["status"] != "cancelled" || c["expired"] != true {
				t.Fatalf("the call is recorded as expired, not as a human's cancel: %v", c)
			}
			if sc.must(200, "POST", "/v1/runs/"+id+"/phases/step_end", map[string]any{}).str("termination") != "" {
				t.Fatal("the step ends without waiting again")
			}
		})
	}
}
