package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// A whole run over HTTP: every phase, every gate decision, the shapes of
// the replies and the generation on each.
func TestWholeRun(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	created := sc.must(http.StatusCreated, "POST", "/v1/runs", map[string]any{
		"thread_id": "t1",
		"messages":  []any{map[string]any{"role": "user", "content": "add 2 and 3, and remind me"}},
		"tools":     []any{map[string]any{"name": "add"}, map[string]any{"name": "shell"}, map[string]any{"name": "fs_read"}, map[string]any{"name": "ls"}},
	})
	id := created.str("run_id")
	if id == "" || created.str("thread_id") != "t1" || created.str("generation") != "g1" || created.num("revision") < 1 {
		t.Fatalf("create: %s", created.raw)
	}
	if g := created.header.Get(GenerationHeader); g != "g1" {
		t.Fatalf("generation header %q", g)
	}

	sc.phase(id, "step_start", nil)
	bi := sc.phase(id, "before_inference", map[string]any{"request": map[string]any{"params": map[string]any{"temperature": 0.5}}})
	req := bi.body["request"].(map[string]any)
	msgs := req["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["content"] != "Reminder: tests first." {
		t.Fatalf("before_inference should place the reminder first: %s", bi.raw)
	}
	if tools := req["tools"].([]any); len(tools) != 4 {
		t.Fatalf("the creation tools should be offered: %s", bi.raw)
	}
	sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"text": "", "tool_calls": []any{
		call("c1", "add", map[string]any{"a": 2, "b": 3}),
		call("c2", "fs_read", map[string]any{"path": ".env"}),
		call("c3", "ls", map[string]any{"dir": "src"}),
	}}})

	g1 := sc.phase(id, "tool_gate", map[string]any{"call": call("c1", "add", map[string]any{"a": 2, "b": 3})})
	if g1.str("decision") != "allow" {
		t.Fatalf("c1: %s", g1.raw)
	}
	sc.phase(id, "before_tool_execute", map[string]any{"call": call("c1", "add", nil)})
	at := sc.phase(id, "after_tool_execute", map[string]any{"call": call("c1", "add", nil),
		"result": map[string]any{"status": "success", "data": "5 (SECRET)"}})
	if res := at.body["result"].(map[string]any); res["data"] != "5 ([redacted])" {
		t.Fatalf("the result transform should redact: %s", at.raw)
	}

	g2 := sc.phase(id, "tool_gate", map[string]any{"call": call("c2", "fs_read", map[string]any{"path": ".env"})})
	if g2.str("decision") != "set_result" || g2.body["result"].(map[string]any)["message"] != "secrets are off limits" {
		t.Fatalf("c2: %s", g2.raw)
	}
	sc.phase(id, "after_tool_execute", map[string]any{"call": call("c2", "fs_read", nil)})

	g3 := sc.phase(id, "tool_gate", map[string]any{"call": call("c3", "ls", map[string]any{"dir": "src"})})
	if g3.str("decision") != "allow" || g3.body["args"].(map[string]any)["safe"] != true {
		t.Fatalf("c3 should be rewritten: %s", g3.raw)
	}
	sc.phase(id, "before_tool_execute", map[string]any{"call": call("c3", "ls", nil)})
	sc.phase(id, "after_tool_execute", map[string]any{"call": call("c3", "ls", nil), "result": map[string]any{"status": "success", "data": []any{"a.go"}}})
	if se := sc.phase(id, "step_end", map[string]any{}); se.str("termination") != "" {
		t.Fatalf("step 1 should not end the run: %s", se.raw)
	}

	sc.phase(id, "step_start", nil)
	bi2 := sc.phase(id, "before_inference", map[string]any{"request": map[string]any{"tools": []any{}}})
	found := false
	for _, m := range bi2.body["request"].(map[string]any)["messages"].([]any) {
		found = found || m.(map[string]any)["content"] == "Double-check the sum."
	}
	if !found {
		t.Fatalf("the context message scheduled in after_tool_execute should be placed: %s", bi2.raw)
	}
	sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"text": "5"}})
	if se := sc.phase(id, "step_end", nil); se.str("termination") != "natural" {
		t.Fatalf("step 2 should end the run naturally: %s", se.raw)
	}
	end := sc.phase(id, "run_end", nil)
	if end.str("termination") != "natural" {
		t.Fatalf("run_end: %s", end.raw)
	}
	got := sc.must(http.StatusOK, "GET", "/v1/runs/"+id, nil)
	state := got.body["state"].(map[string]any)
	if got.str("status") != "done" || got.num("step") != 2 || state["policy.calls"] != 3.0 || state["policy.visits"] != 1.0 {
		t.Fatalf("GET after the run: %s", got.raw)
	}
	if got.header.Get("ETag") != etag(uint64(got.num("revision"))) {
		t.Fatalf("ETag %q for revision %v", got.header.Get("ETag"), got.body["revision"])
	}
	// Done: no more phases.
	problemOK(t, sc.call("POST", "/v1/runs/"+id+"/phases/step_start", nil), http.StatusConflict, "phase_out_of_order")
}

// tool_gate is pure: a client retry gets the same decision, the revision
// does not move, nothing is saved and the decision is counted once.
func TestToolGateRetry(t *testing.T) {
	sc := newSidecar(t, project(t, fileStore, nil), Options{Log: quietLog()})
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		decision   string
	}{
		{"allow", "add", map[string]any{"a": 1}, "allow"},
		{"block", "shell", map[string]any{"cmd": "rm -rf /"}, "block"},
		{"suspend", "deploy", nil, "suspend"},
		{"set_result", "fs_read", map[string]any{"path": ".env"}, "set_result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": tc.tool}}})
			sc.phase(id, "step_start", nil)
			sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
			sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("c1", tc.tool, tc.args)}}})
			before := sc.metricValue(`awaken_gate_decisions_total{decision="` + tc.decision + `"}`)
			first := sc.phase(id, "tool_gate", map[string]any{"call": call("c1", tc.tool, tc.args)})
			storedAfterFirst := sc.storedRevision(t, id)
			for i := 0; i < 3; i++ {
				again := sc.phase(id, "tool_gate", map[string]any{"call": call("c1", tc.tool, tc.args)})
				if string(again.raw) != string(first.raw) {
					t.Fatalf("retry %d differs:\n%s\n%s", i, first.raw, again.raw)
				}
			}
			if first.str("decision") != tc.decision {
				t.Fatalf("decision: %s", first.raw)
			}
			if got := sc.must(http.StatusOK, "GET", "/v1/runs/"+id, nil); got.num("revision") != first.num("revision") {
				t.Fatalf("retries moved the revision: %v then %v", first.body["revision"], got.body["revision"])
			}
			if sc.storedRevision(t, id) != storedAfterFirst {
				t.Fatal("a retry changed the stored checkpoint")
			}
			if after := sc.metricValue(`awaken_gate_decisions_total{decision="` + tc.decision + `"}`); after != before+1 {
				t.Fatalf("decisions counted %v times, want once", after-before)
			}
		})
	}
}

func (sc *sidecar) storedRevision(t *testing.T, id string) uint64 {
	t.Helper()
	cp, ok, err := sc.h.Store().Run(context.Background(), id)
	if err != nil || !ok {
		t.Fatalf("run %s not in the store: %v", id, err)
	}
	return cp.Revision
}

// metricValue reads one sample from /metrics (0 if absent).
func (sc *sidecar) metricValue(sample string) float64 {
	sc.t.Helper()
	r := sc.must(http.StatusOK, "GET", "/metrics", nil)
	for _, line := range strings.Split(string(r.raw), "\n") {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			var f float64
			for _, c := range rest {
				f = f*10 + float64(c-'0')
			}
			return f
		}
	}
	return 0
}

// Every status code the API answers, each with its problem+json code.
func TestStatusCodes(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog(), Token: "s3cret", BodyLimit: 4096})
	id := sc.startRun(map[string]any{"thread_id": "busy"})
	bearer := "Bearer s3cret"
	cases := []struct {
		name         string
		method, path string
		body         any
		hdr          []string
		status       int
		code         string
	}{
		{"healthz needs no token", "GET", "/healthz", nil, []string{"Authorization", ""}, 200, ""},
		{"readyz needs no token", "GET", "/readyz", nil, []string{"Authorization", ""}, 200, ""},
		{"no token", "GET", "/v1/plugins", nil, []string{"Authorization", ""}, 401, "unauthorized"},
		{"wrong token", "GET", "/v1/plugins", nil, []string{"Authorization", "Bearer nope"}, 401, "unauthorized"},
		{"wrong scheme", "GET", "/v1/plugins", nil, []string{"Authorization", "Basic s3cret"}, 401, "unauthorized"},
		{"metrics needs the token", "GET", "/metrics", nil, []string{"Authorization", ""}, 401, "unauthorized"},
		{"plugins", "GET", "/v1/plugins", nil, []string{"Authorization", bearer}, 200, ""},
		{"bad json", "POST", "/v1/runs", "{", nil, 400, "bad_request"},
		{"unknown field", "POST", "/v1/runs", `{"thread":"x"}`, nil, 400, "bad_request"},
		{"two values", "POST", "/v1/runs", `{} {}`, nil, 400, "bad_request"},
		{"bad role", "POST", "/v1/runs", `{"messages":[{"role":"robot","content":"x"}]}`, nil, 400, "bad_request"},
		{"unknown agent", "POST", "/v1/runs", `{"agent":"nobody"}`, nil, 400, "bad_request"},
		{"busy thread", "POST", "/v1/runs", `{"thread_id":"busy"}`, nil, 409, "phase_out_of_order"},
		{"gate without call", "POST", "/v1/runs/" + id + "/phases/tool_gate", `{}`, nil, 400, "bad_request"},
		{"args not an object", "POST", "/v1/runs/" + id + "/phases/tool_gate", `{"call":{"id":"c","name":"x","args":"no"}}`, nil, 400, "bad_request"},
		{"before_inference without request", "POST", "/v1/runs/" + id + "/phases/before_inference", `{}`, nil, 400, "bad_request"},
		{"resume without decisions", "POST", "/v1/runs/" + id + "/resume", `{}`, nil, 400, "bad_request"},
		{"unknown run", "GET", "/v1/runs/run_nope", nil, nil, 404, "run_not_found"},
		{"unknown run phase", "POST", "/v1/runs/run_nope/phases/step_start", `{}`, nil, 404, "run_not_found"},
		{"unknown phase", "POST", "/v1/runs/" + id + "/phases/lunch", `{}`, nil, 404, "bad_request"},
		{"unknown path", "GET", "/v2/everything", nil, nil, 404, "bad_request"},
		{"wrong method", "PUT", "/v1/runs/" + id, nil, nil, 405, "bad_request"},
		{"out of order", "POST", "/v1/runs/" + id + "/phases/after_inference", `{"response":{}}`, nil, 409, "phase_out_of_order"},
		{"run_start again", "POST", "/v1/runs/" + id + "/phases/run_start", `{}`, nil, 409, "phase_out_of_order"},
		{"run_end too early", "POST", "/v1/runs/" + id + "/phases/run_end", `{}`, nil, 409, "phase_out_of_order"},
		{"resume a running run", "POST", "/v1/runs/" + id + "/resume", `{"decisions":[{"target":"x","action":"resume"}]}`, nil, 409, "phase_out_of_order"},
		{"if-match mismatch", "POST", "/v1/runs/" + id + "/phases/step_start", `{}`, []string{"If-Match", `"999"`}, 409, "revision_conflict"},
		{"too large", "POST", "/v1/runs", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, nil, 413, "payload_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := sc.call(tc.method, tc.path, tc.body, tc.hdr...)
			if tc.code == "" {
				if r.status != tc.status {
					t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.raw)
				}
				return
			}
			problemOK(t, r, tc.status, tc.code)
			switch tc.status {
			case 401:
				if r.header.Get("WWW-Authenticate") == "" {
					t.Fatal("401 without WWW-Authenticate")
				}
			case 405:
				if r.header.Get("Allow") != "GET, DELETE" {
					t.Fatalf("Allow %q", r.header.Get("Allow"))
				}
			}
		})
	}

	t.Run("if-match mismatch names the run", func(t *testing.T) {
		// An error about a run adds run_id and revision (server/README.md,
		// "Errors"), a 409 revision_conflict from If-Match too.
		r := sc.call("POST", "/v1/runs/"+id+"/phases/step_start", `{}`, "If-Match", `"999"`)
		problemOK(t, r, 409, "revision_conflict")
		if r.str("run_id") != id || r.body["revision"] == nil {
			t.Fatalf("the problem does not name the run: %s", r.raw)
		}
	})
	t.Run("if-match matches", func(t *testing.T) {
		got := sc.must(200, "GET", "/v1/runs/"+id, nil)
		sc.must(200, "POST", "/v1/runs/"+id+"/phases/step_start", `{}`, "If-Match", got.header.Get("ETag"))
	})
	t.Run("delete", func(t *testing.T) {
		r := sc.must(http.StatusNoContent, "DELETE", "/v1/runs/"+id, nil)
		if len(r.raw) != 0 {
			t.Fatalf("204 with a body: %s", r.raw)
		}
		problemOK(t, sc.call("GET", "/v1/runs/"+id, nil), 404, "run_not_found")
		sc.must(http.StatusCreated, "POST", "/v1/runs", `{"thread_id":"busy"}`) // the thread is free again
	})
	t.Run("overloaded", func(t *testing.T) {
		for i := 0; i < cap(sc.srv.sem); i++ {
			sc.srv.sem <- struct{}{}
		}
		r := sc.call("GET", "/v1/plugins", nil)
		sc.must(200, "GET", "/healthz", nil) // probes pass under load
		sc.must(200, "GET", "/metrics", nil) // and so do scrapes
		for i := 0; i < cap(sc.srv.sem); i++ {
			<-sc.srv.sem
		}
		problemOK(t, r, 429, "overloaded")
		if r.header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	})
	t.Run("hook failure", func(t *testing.T) {
		boom := sc.startRun(map[string]any{"thread_id": "boom"})
		r := sc.call("POST", "/v1/runs/"+boom+"/phases/step_start", `{}`)
		problemOK(t, r, 500, "hook_failed")
		if r.str("termination") != "error:hook_failed" || r.str("run_id") != boom || r.str("plugin") != "policy" ||
			!strings.HasPrefix(r.str("pos"), "scripts/policy.lua:") {
			t.Fatalf("the problem should say how the run ended and where: %s", r.raw)
		}
		if got := sc.must(200, "GET", "/v1/runs/"+boom, nil); got.str("status") != "done" {
			t.Fatalf("after a hook failure: %s", got.raw)
		}
	})
	t.Run("not ready while draining", func(t *testing.T) {
		sc.srv.Drain()
		problemOK(t, sc.call("GET", "/readyz", nil), 503, "not_ready")
		problemOK(t, sc.call("POST", "/v1/runs", `{}`), 503, "not_ready")
		sc.srv.draining.Store(false)
	})
}

// Suspend, wait, resume by ticket, gate again and finish; unknown targets
// change nothing.
func TestSuspendResume(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "deploy"}}})
	sc.phase(id, "step_start", nil)
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("d1", "deploy", nil)}}})
	g := sc.phase(id, "tool_gate", map[string]any{"call": call("d1", "deploy", nil)})
	ticket := g.body["ticket"].(map[string]any)
	if g.str("decision") != "suspend" || ticket["message"] != "deploy to production?" {
		t.Fatalf("gate: %s", g.raw)
	}
	if se := sc.phase(id, "step_end", nil); se.str("termination") != "suspended" {
		t.Fatalf("step_end: %s", se.raw)
	}
	if n := sc.metricValue("awaken_open_suspensions"); n != 1 {
		t.Fatalf("open suspensions %v", n)
	}
	got := sc.must(200, "GET", "/v1/runs/"+id, nil)
	if got.str("status") != "waiting" || len(got.body["suspended"].([]any)) != 1 {
		t.Fatalf("GET waiting: %s", got.raw)
	}
	rev := got.num("revision")
	problemOK(t, sc.call("POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{
		map[string]any{"target": ticket["id"], "action": "resume"},
		map[string]any{"target": "nope", "action": "resume"},
	}}), 400, "unknown_resume_target")
	// A decision without a target names the field it lacks.
	for _, d := range []any{nil, map[string]any{"action": "resume"}} {
		r := sc.call("POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{
			map[string]any{"target": ticket["id"], "action": "resume"}, d}})
		problemOK(t, r, 400, "bad_request")
		if r.str("field") != "decisions[1].target" {
			t.Fatalf("%v: field %q: %s", d, r.str("field"), r.raw)
		}
	}
	if again := sc.must(200, "GET", "/v1/runs/"+id, nil); again.num("revision") != rev || again.str("status") != "waiting" {
		t.Fatalf("a rejected resume changed the run: %s", again.raw)
	}
	res := sc.must(200, "POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{
		map[string]any{"target": ticket["id"], "action": "resume", "result": "yes"},
	}})
	calls := res.body["calls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["status"] != "resuming" {
		t.Fatalf("resume: %s", res.raw)
	}
	if g2 := sc.phase(id, "tool_gate", map[string]any{"call": call("d1", "deploy", nil)}); g2.str("decision") != "allow" {
		t.Fatalf("a resumed call passes the gate again: %s", g2.raw)
	}
	sc.phase(id, "before_tool_execute", map[string]any{"call": call("d1", "deploy", nil)})
	sc.phase(id, "after_tool_execute", map[string]any{"call": call("d1", "deploy", nil), "result": map[string]any{"status": "success", "data": "deployed"}})
	sc.phase(id, "step_end", nil)
	if n := sc.metricValue("awaken_open_suspensions"); n != 0 {
		t.Fatalf("open suspensions %v after resume", n)
	}
}

// Idle runs leave memory (unpinning their generation) and come back from
// the store; finished runs are forgotten after DoneRetention.
func TestIdleRunsComeBackFromTheStore(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog(), IdleTimeout: 30 * time.Millisecond, DoneRetention: 30 * time.Millisecond})
	id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "add"}}})
	sc.phase(id, "step_start", nil)
	waitFor(t, func() bool { runs, _ := sc.srv.openSuspensions(); return runs == 0 })
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{"tools": []any{map[string]any{"name": "add"}}}})
	sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"text": "bye"}})
	sc.phase(id, "step_end", nil)
	sc.phase(id, "run_end", nil)
	sc.must(200, "GET", "/v1/runs/"+id, nil)
	waitFor(t, func() bool { return sc.call("GET", "/v1/runs/"+id, nil).status == 404 })
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:7878", "", true},
		{"localhost:7878", "", true},
		{"[::1]:7878", "", true},
		{"127.5.5.5:1", "", true},
		{"0.0.0.0:7878", "", false},
		{":7878", "", false},
		{"[::]:7878", "", false},
		{"10.0.0.1:7878", "", false},
		{"example.com:7878", "", false},
		{"0.0.0.0:7878", "tok", true},
	} {
		err := CheckListen(tc.addr, tc.token, "AWAKEN_TOKEN")
		if (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, %q) = %v, want ok=%v", tc.addr, tc.token, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "$AWAKEN_TOKEN") {
			t.Errorf("the refusal should name the variable: %v", err)
		}
	}
	// An address that is not HOST:PORT is said to be one, whatever the token.
	for _, addr := range []string{"garbage", "1234", "127.0.0.1:", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:http", "127.0.0.1:-1", "127.0.0.1:123456"} {
		if err := CheckListen(addr, "tok", "AWAKEN_TOKEN"); err == nil || !strings.Contains(err.Error(), "is not HOST:PORT") {
			t.Errorf("CheckListen(%q) = %v", addr, err)
		}
	}
}

func TestPluginsAndReload(t *testing.T) {
	dir := project(t, "", nil)
	sc := newSidecar(t, dir, Options{Log: quietLog()})
	p := sc.must(200, "GET", "/v1/plugins", nil)
	if p.str("generation") != "g1" || p.str("hash") == "" || p.str("loaded_at") == "" {
		t.Fatalf("plugins: %s", p.raw)
	}
	if st, _ := p.body["store"].(map[string]any); st["kind"] != "memory" {
		t.Fatalf("store: %v", st)
	}
	var policy map[string]any
	for _, d := range p.body["plugins"].([]any) {
		if d.(map[string]any)["id"] == "policy" {
			policy = d.(map[string]any)
		}
	}
	if policy == nil || len(policy["hooks"].([]any)) == 0 || len(policy["keys"].([]any)) != 3 {
		t.Fatalf("policy description: %v", policy)
	}
	if lr := p.body["last_reload"].(map[string]any); lr["last_result"] != "loaded" {
		t.Fatalf("last reload: %v", lr)
	}
	if r := sc.must(200, "POST", "/v1/plugins/reload", nil); r.str("last_result") != "unchanged" {
		t.Fatalf("reload without changes: %s", r.raw)
	}
	writeFile(t, dir+"/scripts/broken.lua", "return {")
	r := sc.must(200, "POST", "/v1/plugins/reload", nil)
	if r.str("last_result") != "failed" || !strings.Contains(string(r.raw), "scripts/broken.lua:") || r.str("generation") != "g1" {
		t.Fatalf("a failed reload reports file:line and keeps g1: %s", r.raw)
	}
	if n := sc.metricValue(`awaken_reloads_total{result="failed"}`); n != 1 {
		t.Fatalf("failed reloads counted %v", n)
	}
	sc.must(200, "GET", "/readyz", nil) // the last good generation still serves
}

// With the memory store a run abandoned in the middle of a step is
// forgotten after AbandonAfter; a waiting run is kept.
func TestAbandonedRunsAreForgotten(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog(), IdleTimeout: 20 * time.Millisecond,
		DoneRetention: 20 * time.Millisecond, AbandonAfter: 40 * time.Millisecond})
	abandoned := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "deploy"}}})
	sc.phase(abandoned, "step_start", nil)
	waiting := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "deploy"}}})
	sc.phase(waiting, "step_start", nil)
	sc.phase(waiting, "before_inference", map[string]any{"request": map[string]any{}})
	sc.phase(waiting, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("d1", "deploy", nil)}}})
	sc.phase(waiting, "tool_gate", map[string]any{"call": call("d1", "deploy", nil)})
	sc.phase(waiting, "step_end", nil)
	waitFor(t, func() bool {
		// Memory first: a run that idles out of memory is saved to the
		// store on its way out and deleted there once abandoned, so the
		// store read must come after the memory read, or it can see the
		// run in neither place just before it moves.
		runs, _ := sc.srv.openSuspensions()
		_, ok, _ := sc.h.Store().Run(context.Background(), abandoned)
		return !ok && runs == 0
	})
	problemOK(t, sc.call("GET", "/v1/runs/"+abandoned, nil), 404, "run_not_found")
	if got := sc.must(200, "GET", "/v1/runs/"+waiting, nil); got.str("status") != "waiting" {
		t.Fatalf("a waiting run is kept: %s", got.raw)
	}
}

// notesLua defines a tool of its own: the sidecar offers it with the
// client's tools and runs it (the client cannot), after the gate, with the
// arguments the gate settled on.
const notesLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "notes" }
local count = p:key("notes.count", { reducer = "add", default = 0 })
p:tool {
  id = "note",
  description = "Takes a note",
  parameters = { type = "object", properties = { text = { type = "string" } } },
  execute = function(ctx, args)
    ctx:update(count, 1)
    return awaken.success({ noted = args.text })
  end,
}
p:tool_gate(function(ctx, call)
  if call.name == "note" and call.args.text == "draft" then return awaken.rewrite({ text = "final" }) end
end)
return p
`

func TestPluginToolsRunInTheSidecar(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"notes.lua": notesLua}), Options{Log: quietLog()})
	// The client offers fs_read and a "note" of its own: the plugin's takes
	// its place.
	id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "fs_read"}, map[string]any{"name": "note", "description": "the client's"}}})
	sc.phase(id, "step_start", nil)
	bi := sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	var offered []string
	for _, tl := range bi.body["request"].(map[string]any)["tools"].([]any) {
		m := tl.(map[string]any)
		offered = append(offered, m["name"].(string)+":"+fmt.Sprint(m["description"]))
	}
	if fmt.Sprint(offered) != "[note:Takes a note fs_read:<nil>]" {
		t.Fatalf("tools offered: %v", offered)
	}
	sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{
		call("n1", "note", map[string]any{"text": "draft"}), call("f1", "fs_read", map[string]any{"path": "a"}),
	}}})
	if g := sc.phase(id, "tool_gate", map[string]any{"call": call("n1", "note", map[string]any{"text": "draft"})}); g.str("decision") != "allow" {
		t.Fatalf("gate: %s", g.raw)
	}
	started := sc.phase(id, "before_tool_execute", map[string]any{"call": call("n1", "note", nil)})
	res, ok := started.body["result"].(map[string]any)
	if !ok || res["status"] != "success" || fmt.Sprint(res["data"]) != "map[noted:final]" {
		t.Fatalf("before_tool_execute of a plugin's tool should carry its result (run with the rewritten args): %s", started.raw)
	}
	// A retry (the client lost the reply) gets the same result; the tool
	// does not run again.
	if again := sc.phase(id, "before_tool_execute", map[string]any{"call": call("n1", "note", nil)}); string(again.raw) != string(started.raw) {
		t.Fatalf("retry:\n%s\nfirst:\n%s", again.raw, started.raw)
	}
	// What the tool wrote is committed once, and the revision says so.
	got := sc.must(200, "GET", "/v1/runs/"+id, nil)
	if got.body["state"].(map[string]any)["notes.count"] != 1.0 || got.num("revision") != started.num("revision") {
		t.Fatalf("after the tool ran: %s\nbefore_tool_execute said %s", got.raw, started.raw)
	}
	sc.phase(id, "after_tool_execute", map[string]any{"call": call("n1", "note", nil), "result": res})
	// A client's tool is the client's to run: no result.
	sc.phase(id, "tool_gate", map[string]any{"call": call("f1", "fs_read", map[string]any{"path": "a"})})
	if started := sc.phase(id, "before_tool_execute", map[string]any{"call": call("f1", "fs_read", nil)}); started.body["result"] != nil {
		t.Fatalf("before_tool_execute of a client's tool: %s", started.raw)
	}
	sc.phase(id, "after_tool_execute", map[string]any{"call": call("f1", "fs_read", nil), "result": map[string]any{"status": "success", "data": "x"}})
	sc.phase(id, "step_end", nil)
}

// TestAccessLogLine: one JSON line per request, its time in milliseconds
// (not raw nanoseconds).
func TestAccessLogLine(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return buf.Write(p) })
	sc := newSidecar(t, project(t, "", nil), Options{Log: slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	sc.must(200, "GET", "/v1/plugins", nil)
	mu.Lock()
	defer mu.Unlock()
	var line map[string]any
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, `"msg":"request"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	ms, ok := line["took_ms"].(float64)
	if !ok || ms < 0 || ms > 60_000 || line["path"] != "/v1/plugins" || line["status"] != float64(200) {
		t.Fatalf("access log line %v", line)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A phase path that names no phase endpoint says what it should have said.
func TestUnknownPhase(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	id := sc.startRun(map[string]any{})
	if r := sc.call("POST", "/v1/runs/"+id+"/phases/tool_gat", map[string]any{}); r.status != 404 ||
		!strings.Contains(string(r.raw), `did you mean \"tool_gate\"`) {
		t.Fatalf("a misspelt phase: %d %s", r.status, r.raw)
	}
	if r := sc.call("POST", "/v1/runs/"+id+"/phases/run_start", map[string]any{}); r.status != 409 ||
		!strings.Contains(string(r.raw), "phase_out_of_order") {
		t.Fatalf("run_start as a phase: %d %s", r.status, r.raw)
	}
}

// Problem details say in the API's words what was expected and what to
// do: no internal stage names, no Go types.
func TestProblemDetailsSpeakTheAPI(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	id := sc.startRun(map[string]any{})
	phases := "/v1/runs/" + id + "/phases/"
	for _, tc := range []struct {
		name, path string
		body       any
		status     int
		code       string
		want       []string
	}{
		{"tool_gate after run_start", phases + "tool_gate", map[string]any{"call": call("c1", "fs_read", nil)}, 409, "phase_out_of_order",
			[]string{"tool_gate is out of order: the last phase was run_start, so step_start comes next (a step: step_start, before_inference, after_inference, then tool_gate"}},
		{"after_inference after run_start", phases + "after_inference", `{"response":{}}`, 409, "phase_out_of_order",
			[]string{"after_inference is out of order: the last phase was run_start, so step_start comes next"}},
		{"an array to /v1/runs", "/v1/runs", `[1, 2]`, 400, "bad_request",
			[]string{"the body must be a JSON object, not a JSON array; send this endpoint's fields in one object, or {} for none"}},
		{"an array to step_start", phases + "step_start", `[]`, 400, "bad_request", []string{"the body must be a JSON object, not a JSON array"}},
		{"an array to tool_gate", phases + "tool_gate", `[]`, 400, "bad_request", []string{"the body must be a JSON object, not a JSON array"}},
		{"a string to /v1/runs", "/v1/runs", `"x"`, 400, "bad_request", []string{"the body must be a JSON object, not a JSON string"}},
		{"a field of the wrong type", "/v1/runs", `{"thread_id": 5}`, 400, "bad_request",
			[]string{"the body is not valid JSON for this endpoint: thread_id must be a string, not a JSON number"}},
		{"a list of the wrong type", "/v1/runs", `{"tools": {}}`, 400, "bad_request", []string{"tools must be an array, not a JSON object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sc.call("POST", tc.path, tc.body)
			problemOK(t, r, tc.status, tc.code)
			detail := r.str("detail")
			for _, w := range tc.want {
				if !strings.Contains(detail, w) {
					t.Errorf("detail %q lacks %q", detail, w)
				}
			}
			for _, leak := range []string{"run_started", "cannot follow", "Go value", "Go struct", "unmarshal", "struct {"} {
				if strings.Contains(detail, leak) {
					t.Errorf("detail %q says %q", detail, leak)
				}
			}
		})
	}
}
