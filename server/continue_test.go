package server

import (
	"context"
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

// TestContinueAtMaxSteps: a continue asked at the agent's last step
// cannot run another step. The run ends stopped:max_steps, and the
// content must not be answered as "append and run another step", nor
// join the conversation the thread keeps as a message nobody answered.
func TestContinueAtMaxSteps(t *testing.T) {
	sc := newSidecar(t, project(t, "\n[agents.onestep]\ntools = []\nmax_steps = 1\n",
		map[string]string{"reviewer.lua": ccContinueLua}), Options{Log: quietLog()})
	r := sc.must(201, "POST", "/v1/runs", map[string]any{"agent": "onestep", "thread_id": "th-max",
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	id := r.str("run_id")
	sc.must(200, "POST", "/v1/runs/"+id+"/phases/step_start", map[string]any{})
	sc.must(200, "POST", "/v1/runs/"+id+"/phases/before_inference", map[string]any{"request": map[string]any{}})
	sc.must(200, "POST", "/v1/runs/"+id+"/phases/after_inference", map[string]any{"response": map[string]any{"text": "done"}})
	out := sc.must(200, "POST", "/v1/runs/"+id+"/phases/step_end", map[string]any{})
	if out.str("termination") != "stopped:max_steps" || out.body["continued"] != nil {
		t.Fatalf("step_end at the last step: %s", out.raw)
	}
	sc.must(200, "POST", "/v1/runs/"+id+"/phases/run_end", map[string]any{})
	th, ok, err := sc.h.Store().Thread(context.Background(), "th-max")
	if err != nil || !ok || len(th.Messages) == 0 {
		t.Fatalf("thread: %+v %v %v", th, ok, err)
	}
	if last := th.Messages[len(th.Messages)-1]; last.Content != "done" {
		t.Fatalf("the thread's conversation ends with %+v, want the model's answer", last)
	}
}
