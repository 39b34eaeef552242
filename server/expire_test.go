package server

import (
	"strings"
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

// A human's decision for a call the sidecar settled as expired comes too
// late: the refusal says that the approval expired and what the runtime
// decided, not only that the run does not wait or that the target is
// unknown. (A decision that arrives before the janitor settles the call is
// dropped in favour of the expiry.)
func TestLateDecisionSaysTheApprovalExpired(t *testing.T) {
	lua := strings.Replace(expiringLua, `timeout = "50ms"`, `id = "tk-" .. call.id, timeout = call.args.timeout`, 1)
	sc := newSidecar(t, project(t, "", map[string]string{"approve.lua": lua}),
		Options{Log: quietLog(), IdleTimeout: 20 * time.Millisecond})
	id := sc.must(201, "POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "deploy"}}}).str("run_id")
	sc.must(200, "POST", "/v1/runs/"+id+"/phases/step_start", map[string]any{})
	sc.must(200, "POST", "/v1/runs/"+id+"/phases/before_inference", map[string]any{"request": map[string]any{}})
	calls := []any{
		map[string]any{"id": "c1", "name": "deploy", "args": map[string]any{"timeout": "30ms"}},
		map[string]any{"id": "c2", "name": "deploy", "args": map[string]any{"timeout": "1h"}},
	}
	sc.must(200, "POST", "/v1/runs/"+id+"/phases/after_inference", map[string]any{"response": map[string]any{"tool_calls": calls}})
	for _, c := range calls {
		if d := sc.must(200, "POST", "/v1/runs/"+id+"/phases/tool_gate", map[string]any{"call": c}); d.str("decision") != "suspend" {
			t.Fatalf("gate: %s", d.raw)
		}
	}
	sc.must(200, "POST", "/v1/runs/"+id+"/phases/step_end", map[string]any{})
	waitFor(t, func() bool { return sc.metricValue("awaken_tickets_expired_total") == 1 })
	for _, target := range []string{"c1", "tk-c1"} {
		r := sc.call("POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{map[string]any{"target": target, "action": "resume"}}})
		if r.status != 409 || r.str("code") != "phase_out_of_order" ||
			!strings.Contains(r.str("detail"), "approval of call c1 (ticket tk-c1) expired at") || !strings.Contains(r.str("detail"), "cancelled it") {
			t.Fatalf("a decision for %s, settled as expired, on the running run: %d %s", target, r.status, r.raw)
		}
	}
	// The step ends and waits on c2 again: a decision for c1 is still late.
	if e := sc.must(200, "POST", "/v1/runs/"+id+"/phases/step_end", map[string]any{}); e.str("termination") != "suspended" {
		t.Fatalf("step_end: %s", e.raw)
	}
	r := sc.call("POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{map[string]any{"target": "c1", "action": "resume"}}})
	if r.status != 400 || r.str("code") != "unknown_resume_target" || !strings.Contains(r.str("detail"), "approval of call c1 (ticket tk-c1) expired at") ||
		!strings.Contains(r.str("detail"), "suspended: c2") {
		t.Fatalf("a decision for c1 while the run waits on c2: %d %s", r.status, r.raw)
	}
	if r := sc.call("POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{map[string]any{"target": "c9", "action": "resume"}}}); r.status != 400 ||
		!strings.Contains(r.str("detail"), `"c9" is not a suspended call or ticket of run`) {
		t.Fatalf("an unknown target: %d %s", r.status, r.raw)
	}
}

// TestRestartSettlesStoredExpiries: a sidecar on the file store restarts
// while a run waits on an approval; nobody calls the run again, and the
// new process settles it when its ticket expires all the same, since
// `serve` notes the store's waiting runs at start (NoteStoredExpiries).
func TestRestartSettlesStoredExpiries(t *testing.T) {
	lua := strings.Replace(expiringLua, `timeout = "50ms"`, `timeout = "2s"`, 1)
	dir := project(t, "\n[store]\nkind = \"file\"\npath = \"state\"\n", map[string]string{"approve.lua": lua})
	a := newSidecar(t, dir, Options{Log: quietLog()})
	id := a.startRun(map[string]any{"tools": []any{map[string]any{"name": "deploy"}}})
	a.phase(id, "step_start", nil)
	a.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	a.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("c1", "deploy", nil)}}})
	if d := a.phase(id, "tool_gate", map[string]any{"call": call("c1", "deploy", nil)}); d.str("decision") != "suspend" {
		t.Fatalf("gate: %s", d.raw)
	}
	if e := a.phase(id, "step_end", nil); e.str("termination") != "suspended" {
		t.Fatalf("step_end: %s", e.raw)
	}
	a.close()

	b := newSidecar(t, dir, Options{Log: quietLog(), IdleTimeout: 40 * time.Millisecond})
	if n, err := b.srv.NoteStoredExpiries(t.Context()); err != nil || n != 1 {
		t.Fatalf("NoteStoredExpiries = %d, %v; want the one waiting run", n, err)
	}
	waitFor(t, func() bool { return b.metricValue("awaken_tickets_expired_total") == 1 })
	g := b.must(200, "GET", "/v1/runs/"+id, nil)
	calls := g.body["state"].(map[string]any)["__runtime.tool_calls"].(map[string]any)
	if c := calls["c1"].(map[string]any); g.str("status") != "running" || c["status"] != "cancelled" || c["expired"] != true {
		t.Fatalf("after the expiry: %s", g.raw)
	}
}
