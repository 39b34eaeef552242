package server

import (
	"testing"
)

// TestStepEndReplyCarriesTheContinue is the phase API's side of
// runtime.continue: step_end answers the messages to append and no
// termination, until the agent's bound is spent.
func TestStepEndReplyCarriesTheContinue(t *testing.T) {
	sc := newSidecar(t, project(t, "\n[agents.reviewed]\ntools = []\nmax_continues = 1\n",
		map[string]string{"reviewer.lua": ccContinueLua}), Options{Log: quietLog()})
	r := sc.call("POST", "/v1/runs", map[string]any{"agent": "reviewed"})
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	id := r.body["run_id"].(string)
	step := func() map[string]any {
		t.Helper()
		for _, p := range []struct {
			name string
			body any
		}{{"step_start", map[string]any{}}, {"before_inference", map[string]any{"request": map[string]any{}}},
			{"after_inference", map[string]any{"response": map[string]any{"text": "done"}}}} {
			if r := sc.call("POST", "/v1/runs/"+id+"/phases/"+p.name, p.body); r.status != 200 {
				t.Fatalf("%s: %d %s", p.name, r.status, r.raw)
			}
		}
		r := sc.call("POST", "/v1/runs/"+id+"/phases/step_end", map[string]any{})
		if r.status != 200 {
			t.Fatalf("step_end: %d %s", r.status, r.raw)
		}
		return r.body
	}
	out := step()
	cont, _ := out["continued"].([]any)
	if out["termination"] != nil || len(cont) != 1 {
		t.Fatalf("first step_end: %v", out)
	}
	if m := cont[0].(map[string]any); m["role"] != "user" || m["content"] != "Run the tests before you finish." {
		t.Fatalf("continued %v", m)
	}
	if out := step(); out["termination"] != "natural" || out["continued"] != nil {
		t.Fatalf("second step_end, past the bound: %v", out)
	}
}
