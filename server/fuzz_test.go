package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fuzzEndpoints are the endpoints that read a body, each with the stage the
// run is brought to first, so the body reaches the session and not only
// the phase-order check.
var fuzzEndpoints = []struct {
	method, path string // "{id}" is the prepared run
	prepare      []string
}{
	{"POST", "/v1/runs", nil},
	{"POST", "/v1/runs/{id}/phases/step_start", nil},
	{"POST", "/v1/runs/{id}/phases/before_inference", []string{"step_start"}},
	{"POST", "/v1/runs/{id}/phases/after_inference", []string{"step_start", "before_inference"}},
	{"POST", "/v1/runs/{id}/phases/tool_gate", []string{"step_start", "before_inference", "after_inference"}},
	{"POST", "/v1/runs/{id}/phases/before_tool_execute", []string{"step_start", "before_inference", "after_inference", "tool_gate"}},
	{"POST", "/v1/runs/{id}/phases/after_tool_execute", []string{"step_start", "before_inference", "after_inference", "tool_gate", "before_tool_execute"}},
	{"POST", "/v1/runs/{id}/phases/step_end", []string{"step_start", "before_inference", "after_inference"}},
	{"POST", "/v1/runs/{id}/phases/run_end", nil},
	{"POST", "/v1/runs/{id}/resume", []string{"step_start", "before_inference", "after_inference:deploy", "tool_gate:deploy", "step_end"}},
	{"POST", "/v1/hooks/claude-code", nil},
	{"DELETE", "/v1/runs/{id}", nil},
	{"POST", "/v1/runs/{id}/phases/{body}", nil},
	{"POST", "/v1/hooks/codex", nil},
	{"POST", "/v1/hooks/gemini", nil},
	{"POST", "/v1/hooks/cursor", nil},
	{"POST", "/v1/hooks/copilot?event=preToolUse", nil},
	{"POST", "/v1/hooks/claude-code?suspend=defer", nil},
}

// hookSeeds are the recorded events of each agent's endpoint.
var hookSeeds = map[string]string{
	"/v1/hooks/claude-code":               "claude-code",
	"/v1/hooks/claude-code?suspend=defer": "claude-code",
	"/v1/hooks/codex":                     "codex",
	"/v1/hooks/gemini":                    "gemini",
	"/v1/hooks/cursor":                    "cursor",
	"/v1/hooks/copilot?event=preToolUse":  "copilot",
}

var prepBodies = map[string]string{
	"step_start":             `{}`,
	"before_inference":       `{"request":{"tools":[{"name":"add"},{"name":"deploy"},{"name":"shell"},{"name":"fs_read"},{"name":"ls"}]}}`,
	"after_inference":        `{"response":{"tool_calls":[{"id":"c1","name":"add","args":{"a":1}}]}}`,
	"tool_gate":              `{"call":{"id":"c1","name":"add","args":{"a":1}}}`,
	"before_tool_execute":    `{"call":{"id":"c1"}}`,
	"after_inference:deploy": `{"response":{"tool_calls":[{"id":"d1","name":"deploy","args":{}}]}}`,
	"tool_gate:deploy":       `{"call":{"id":"d1","name":"deploy","args":{}}}`,
	"step_end":               `{}`,
}

var knownCodes = map[string]int{
	"bad_request": 0, "unauthorized": 401, "run_not_found": 404, "phase_out_of_order": 409, "payload_too_large": 413,
	"overloaded": 429, "not_ready": 503, "schema_violation": 400, "unknown_resume_target": 400, "revision_conflict": 409,
	"hook_failed": 500, "hook_timeout": 500, "phase_run_loop_exceeded": 500, "unknown_key": 500,
	"unknown_action_handler": 500, "unknown_effect_handler": 500,
	"unsupported_media_type": 415, "host_not_allowed": 403, "origin_not_allowed": 403, "request_timeout": 408,
	"store_unavailable": 503, "run_lost": 409,
}

// FuzzSidecarBody posts arbitrary bytes to every endpoint that reads a
// body and checks the reply: no panic, and either a success with a JSON
// body or problem+json with a known code and a matching status.
func FuzzSidecarBody(f *testing.F) {
	for i, ep := range fuzzEndpoints {
		n := uint8(i)
		f.Add(n, []byte(`{}`))
		f.Add(n, []byte(``))
		f.Add(n, []byte(`null`))
		f.Add(n, []byte(`{"call":{"id":"c1","name":"add","args":{"a":[1,{"b":null}]}},"result":{"status":"success","data":"x"}}`))
		f.Add(n, []byte(`{"request":{"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"add"}],"params":{"temperature":0.1,"max_tokens":5}}}`))
		f.Add(n, []byte(`{"response":{"text":"t","tool_calls":[{"id":"x","name":"deploy","args":{}},{"name":"shell","args":{"cmd":"rm"}}],"usage":{"total_tokens":3}}}`))
		f.Add(n, []byte(`{"decisions":[{"target":"d1","action":"resume","result":{"ok":true}},{"target":"ticket_d1","action":"cancel"}]}`))
		f.Add(n, []byte(`{"agent":"short","thread_id":"t","messages":[{"role":"system","content":"s"}],"tools":[{"name":"a","parameters":{"type":"object"}}]}`))
		f.Add(n, []byte(`{"call":{"id":"c1","name":"add","args":{"a":1,"\u0061":2}}}`))
		f.Add(n, []byte(`{"request":{"messages":[{"role":"user","role":"system"}]}}`))
		if agent, ok := hookSeeds[ep.path]; ok {
			files, _ := filepath.Glob(filepath.Join("testdata", "claude-code", "*.json"))
			if agent != "claude-code" {
				files = nil
			}
			more, _ := filepath.Glob(filepath.Join("..", "testdata", "agents", agent, "*.json"))
			for _, file := range append(files, more...) {
				b, err := os.ReadFile(file)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(n, b)
			}
		}
		if ep.path == "/v1/runs/{id}/phases/{body}" {
			f.Add(n, []byte("tool_gate"))
			f.Add(n, []byte("%zz"))
		}
	}
	sc := newSidecar(f, project(f, "", nil), Options{Log: quietLog(), BodyLimit: 64 << 10,
		IdleTimeout: 200 * time.Millisecond, DoneRetention: 200 * time.Millisecond, AbandonAfter: 200 * time.Millisecond})
	h := sc.srv.Handler()
	send := func(method, path string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "http://127.0.0.1"+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		ep := fuzzEndpoints[int(which)%len(fuzzEndpoints)]
		path := ep.path
		if bytes.Contains([]byte(path), []byte("{id}")) {
			rec := send("POST", "/v1/runs", []byte(`{"tools":[{"name":"add"}]}`))
			if rec.Code != http.StatusCreated {
				t.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
			var created map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &created)
			id, _ := created["run_id"].(string)
			for _, p := range ep.prepare {
				name := p
				if i := bytes.IndexByte([]byte(p), ':'); i > 0 {
					name = p[:i]
				}
				if rec := send("POST", "/v1/runs/"+id+"/phases/"+name, []byte(prepBodies[p])); rec.Code != 200 {
					t.Fatalf("prepare %s: %d %s", p, rec.Code, rec.Body)
				}
			}
			path = string(bytes.Replace([]byte(path), []byte("{id}"), []byte(id), 1))
			if bytes.Contains([]byte(path), []byte("{body}")) {
				path = string(bytes.Replace([]byte(path), []byte("{body}"), []byte(urlSegment(body)), 1))
			}
		}
		rec := send(ep.method, path, body)
		checkReply(t, ep.path, rec)
	})
}

// urlSegment makes a path segment of arbitrary bytes.
func urlSegment(b []byte) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c > ' ' && c < 0x7f && c != '/' && c != '?' && c != '#' && c != '%' {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return "x"
	}
	return string(out)
}

func checkReply(t *testing.T, endpoint string, rec *httptest.ResponseRecorder) {
	t.Helper()
	ct := rec.Header().Get("Content-Type")
	if rec.Header().Get(GenerationHeader) == "" {
		t.Fatalf("%s: no %s header", endpoint, GenerationHeader)
	}
	if _, hook := hookSeeds[endpoint]; hook && rec.Code != 200 {
		t.Fatalf("%s: a hook adapter must answer 200, got %d: %s", endpoint, rec.Code, rec.Body)
	}
	switch {
	case rec.Code == http.StatusNoContent:
		if rec.Body.Len() != 0 {
			t.Fatalf("204 with a body: %s", rec.Body)
		}
	case rec.Code < 400:
		var v map[string]any
		if ct != "application/json" || json.Unmarshal(rec.Body.Bytes(), &v) != nil {
			t.Fatalf("%s: %d reply is not a JSON object (%s): %s", endpoint, rec.Code, ct, rec.Body)
		}
	default:
		var p problem
		if ct != "application/problem+json" || json.Unmarshal(rec.Body.Bytes(), &p) != nil {
			t.Fatalf("%s: %d reply is not problem+json (%s): %s", endpoint, rec.Code, ct, rec.Body)
		}
		want, known := knownCodes[p.Code]
		if !known || p.Status != rec.Code || p.Type == "" || p.Title == "" || p.Detail == "" || (want != 0 && want != rec.Code) {
			t.Fatalf("%s: bad problem for status %d: %s", endpoint, rec.Code, rec.Body)
		}
	}
}
