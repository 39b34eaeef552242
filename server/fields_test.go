package server

import (
	"net/http"
	"strings"
	"testing"
)

// Every 400 about one field of the body names it in the problem's field
// member, in one form (no "$."), whether the decoder or the session found
// it, so a client can point at the field without parsing detail.
func TestBadFieldsAreNamed(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "deploy"}, map[string]any{"name": "x"}}})
	path := "/v1/runs/" + id + "/phases/"
	check := func(what string, r reply, code, field string) {
		t.Helper()
		problemOK(t, r, http.StatusBadRequest, code)
		if r.str("field") != field {
			t.Errorf("%s: field %q, want %q: %s", what, r.str("field"), field, r.raw)
		}
	}
	sc.phase(id, "step_start", nil)
	check("a wrong type", sc.call("POST", path+"before_inference", `{"request":{"params":{"max_tokens":"many"}}}`),
		"bad_request", "request.params.max_tokens")
	check("a negative max_tokens", sc.call("POST", path+"before_inference", `{"request":{"params":{"max_tokens":-1}}}`),
		"bad_request", "request.params.max_tokens")
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	check("a call without a name", sc.call("POST", path+"after_inference", `{"response":{"tool_calls":[{"id":"c1","name":""}]}}`),
		"bad_request", "response.tool_calls[0].name")
	sc.phase(id, "after_inference", `{"response":{"tool_calls":[{"id":"c1","name":"x"},{"id":"c2","name":"deploy"}]}}`)
	check("a call nobody made", sc.call("POST", path+"tool_gate", `{"call":{"id":"c9","name":"x"}}`),
		"bad_request", "call.id")
	sc.phase(id, "tool_gate", `{"call":{"id":"c1","name":"x"}}`)
	sc.phase(id, "before_tool_execute", `{"call":{"id":"c1","name":"x"}}`)
	check("a result without a status", sc.call("POST", path+"after_tool_execute", `{"call":{"id":"c1","name":"x"},"result":{"data":1}}`),
		"bad_request", "result.status")
	sc.phase(id, "after_tool_execute", `{"call":{"id":"c1","name":"x"},"result":{"status":"success"}}`)
	sc.phase(id, "tool_gate", `{"call":{"id":"c2","name":"deploy"}}`)
	sc.phase(id, "step_end", nil)
	resume := "/v1/runs/" + id + "/resume"
	check("an unknown action", sc.call("POST", resume, `{"decisions":[{"target":"c2","action":"explode"}]}`),
		"bad_request", "decisions[0].action")
	check("an unknown target", sc.call("POST", resume, `{"decisions":[{"target":"c2","action":"cancel"},{"target":"zz","action":"cancel"}]}`),
		"unknown_resume_target", "decisions[1].target")
}

// A number the field cannot hold (out of range, or a fraction for an
// integer) is refused saying so, not as "a number, not a JSON number".
func TestOutOfRangeNumbersSaySo(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "x"}}})
	path := "/v1/runs/" + id + "/phases/"
	sc.phase(id, "step_start", nil)
	for _, tc := range []struct{ body, field, says string }{
		{`{"request":{"params":{"max_tokens":1.5}}}`, "request.params.max_tokens", "must be an integer, not 1.5; send a whole number"},
		{`{"request":{"params":{"max_tokens":1e30}}}`, "request.params.max_tokens", "must be an integer, not 1e30;"},
		{`{"request":{"params":{"temperature":1e400}}}`, "request.params.temperature", "must be a number, not 1e400; send a number of a 64-bit float's range"},
	} {
		r := sc.call("POST", path+"before_inference", tc.body)
		problemOK(t, r, http.StatusBadRequest, "bad_request")
		if r.str("field") != tc.field || !strings.Contains(r.str("detail"), tc.says) {
			t.Errorf("%s: field %q, detail %q; want %q saying %q", tc.body, r.str("field"), r.str("detail"), tc.field, tc.says)
		}
	}
}

// A value as deeply nested as a body may be passes a plugin that hands it
// back: a result transform returning the result it was given answers 200
// with the data whole (the Lua bridge once refused past 64 levels, a 500
// blamed on the plugin, and the run ended).
func TestDeepValuesPassPlugins(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "add"}}})
	path := "/v1/runs/" + id + "/phases/"
	deep := strings.Repeat(`{"x":[`, 2000) + `"leaf"` + strings.Repeat(`]}`, 2000)
	sc.phase(id, "step_start", nil)
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	sc.phase(id, "after_inference", `{"response":{"tool_calls":[{"id":"c1","name":"add","args":{"a":`+deep+`}}]}}`)
	sc.phase(id, "tool_gate", `{"call":{"id":"c1","name":"add","args":{"a":`+deep+`}}}`)
	sc.phase(id, "before_tool_execute", `{"call":{"id":"c1","name":"add"}}`)
	r := sc.call("POST", path+"after_tool_execute", `{"call":{"id":"c1","name":"add"},"result":{"status":"success","data":`+deep+`}}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.raw), strings.Repeat(`{"x":[`, 2000)+`"leaf"`) {
		t.Fatalf("a result 4000 levels deep: %d %.300s", r.status, r.raw)
	}
}

// A run that waited, was resumed, and is deleted in the middle of the
// step leaves its thread free: the thread's next run starts (it found the
// run lost, 409 run_lost, while the thread still named it as waiting).
func TestDeleteResumedRunFreesItsThread(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	id := sc.startRun(map[string]any{"thread_id": "t-del", "tools": []any{map[string]any{"name": "deploy"}}})
	sc.phase(id, "step_start", nil)
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	sc.phase(id, "after_inference", `{"response":{"tool_calls":[{"id":"c1","name":"deploy"}]}}`)
	if g := sc.phase(id, "tool_gate", `{"call":{"id":"c1","name":"deploy"}}`); g.str("decision") != "suspend" {
		t.Fatalf("gate: %s", g.raw)
	}
	sc.phase(id, "step_end", nil)
	sc.must(http.StatusOK, "POST", "/v1/runs/"+id+"/resume", `{"decisions":[{"target":"c1","action":"resume"}]}`)
	sc.must(http.StatusNoContent, "DELETE", "/v1/runs/"+id, nil)
	if r := sc.call("POST", "/v1/runs", map[string]any{"thread_id": "t-del"}); r.status != http.StatusCreated {
		t.Fatalf("the thread's next run: %d %s", r.status, r.raw)
	}
}

// A conversation and tools a client sends are checked where every driver
// sends them (the run's Start and before_inference): a bad role, a tool
// call in a message without its id or name, a tool without a name or with
// another's are 400s naming the field.
func TestConversationAndToolsAreChecked(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	for _, tc := range []struct{ body, field string }{
		{`{"messages":[{"role":"robot","content":"x"}]}`, "messages[0].role"},
		{`{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1"}]}]}`, "messages[1].tool_calls[0].name"},
		{`{"tools":[{"name":"a"},{"name":""}]}`, "tools[1].name"},
		{`{"tools":[{"name":"a"},{"name":"b"},{"name":"a"}]}`, "tools[2].name"},
	} {
		r := sc.call("POST", "/v1/runs", tc.body)
		problemOK(t, r, http.StatusBadRequest, "bad_request")
		if r.str("field") != tc.field {
			t.Errorf("POST /v1/runs %s: field %q, want %q", tc.body, r.str("field"), tc.field)
		}
	}
	id := sc.startRun(map[string]any{})
	sc.phase(id, "step_start", nil)
	for _, tc := range []struct{ body, field string }{
		{`{"request":{"messages":[{"role":"assistant","tool_calls":[{"name":"x"}]}]}}`, "request.messages[0].tool_calls[0].id"},
		{`{"request":{"tools":[{"name":"x"},{"name":"x"}]}}`, "request.tools[1].name"},
	} {
		r := sc.call("POST", "/v1/runs/"+id+"/phases/before_inference", tc.body)
		problemOK(t, r, http.StatusBadRequest, "bad_request")
		if r.str("field") != tc.field {
			t.Errorf("before_inference %s: field %q, want %q", tc.body, r.str("field"), tc.field)
		}
	}
	// Nothing changed: the step goes on.
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	r := sc.call("POST", "/v1/runs/"+id+"/phases/after_inference", `{"response":{"text":"x","usage":{"prompt_tokens":3,"completion_tokens":-2}}}`)
	problemOK(t, r, http.StatusBadRequest, "bad_request")
	if r.str("field") != "response.usage.completion_tokens" {
		t.Errorf("negative usage: field %q", r.str("field"))
	}
	sc.phase(id, "after_inference", `{"response":{"text":"x","usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}}`)
}

// An unknown agent of half a megabyte is refused at once, and not echoed
// whole.
func TestHugeUnknownAgent(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	r := sc.call("POST", "/v1/runs", `{"agent":"`+strings.Repeat("x", 500<<10)+`"}`)
	problemOK(t, r, http.StatusBadRequest, "bad_request")
	if d := r.str("detail"); len(d) > 1000 || !strings.Contains(d, "more bytes") {
		t.Errorf("detail of %d bytes: %.300s", len(d), d)
	}
}

// A run id of 100 KB in the URL is not found, and not echoed whole.
func TestHugeRunIDNotEchoed(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	r := sc.call("GET", "/v1/runs/"+strings.Repeat("r", 100<<10), nil)
	problemOK(t, r, http.StatusNotFound, "run_not_found")
	if d := r.str("detail"); len(d) > 1000 {
		t.Errorf("detail of %d bytes", len(d))
	}
}

// What a request names in its URL or headers is echoed clipped in a
// problem's detail, however long it is, as a run id is.
func TestHugeNamesNotEchoed(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	long := strings.Repeat("r", 100<<10)
	id := sc.startRun(map[string]any{})
	for _, c := range []struct {
		method, path, ifMatch string
		status                int
		code                  string
	}{
		{"GET", "/v1/hooks/claude-code/sessions/" + long, "", http.StatusNotFound, "session_not_found"},
		{"POST", "/v1/runs/" + id + "/phases/" + long, "", http.StatusNotFound, "bad_request"},
		{"GET", "/v1/" + long, "", http.StatusNotFound, "bad_request"},
		{"GET", "/v1/runs/" + long + "/", "", http.StatusNotFound, "bad_request"},
		{"PUT", "/v1/runs/" + long, "", http.StatusMethodNotAllowed, "bad_request"},
		{"POST", "/v1/runs/" + id + "/phases/step_start", "99," + long, http.StatusConflict, "revision_conflict"},
	} {
		r := sc.call(c.method, c.path, nil, "If-Match", c.ifMatch)
		problemOK(t, r, c.status, c.code)
		if d := r.str("detail"); len(d) > 1000 {
			t.Errorf("%s %.60s: detail of %d bytes", c.method, c.path, len(d))
		}
	}
}
