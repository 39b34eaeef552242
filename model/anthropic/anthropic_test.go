package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/model"
)

const key = "sk-ant-secret"

func newModel(t *testing.T, url string, c Config) *Model {
	t.Helper()
	c.BaseURL, c.Getenv = url, func(string) string { return key }
	if c.Model == "" {
		c.Model = "claude-test"
	}
	if c.RetryBase == 0 {
		c.RetryBase = time.Millisecond
	}
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestConversationOnTheWire checks the request a conversation with a
// system prompt, context, tool calls and their results becomes, and the
// answer decoded from a reply with text and tool_use blocks.
func TestConversationOnTheWire(t *testing.T) {
	var got map[string]any
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" || r.Method != "POST" {
			http.Error(w, "wrong path", 404)
			return
		}
		hdr = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &got)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","stop_reason":"tool_use",
			"content":[{"type":"text","text":"Reading "},{"type":"text","text":"it."},
			{"type":"tool_use","id":"toolu_2","name":"fs_read","input":{"path":"b.go","n":2}}],
			"usage":{"input_tokens":120,"output_tokens":30}}`)
	}))
	defer srv.Close()
	m := newModel(t, srv.URL+"/v1", Config{})
	temp, maxTok := 0.2, 100
	resp, err := m.Infer(context.Background(), model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "You are careful."},
			{Role: model.RoleSystem, Content: "Cite files."},
			{Role: model.RoleUser, Content: "Why?"},
			{Role: model.RoleAssistant, Content: "Let me look.", ToolCalls: []model.ToolCall{
				{ID: "toolu_1", Name: "fs_read", Args: map[string]any{"path": "a.go"}},
				{ID: "toolu_x", Name: "fs_list", Args: nil}}},
			{Role: model.RoleTool, ToolCallID: "toolu_1", Content: "package a"},
			{Role: model.RoleTool, ToolCallID: "toolu_x", Content: "a.go b.go"},
			{Role: model.RoleUser, Content: "Go on."},
		},
		Tools:  []model.ToolSpec{{Name: "fs_read", Description: "read", Parameters: map[string]any{"type": "object"}}, {Name: "fs_list"}},
		Params: model.Params{Model: "claude-other", Temperature: &temp, MaxTokens: &maxTok},
	})
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Get("x-api-key") != key || hdr.Get("anthropic-version") != Version || hdr.Get("Authorization") != "" {
		t.Fatalf("headers %v", hdr)
	}
	want := `{"max_tokens":100,"messages":[` +
		`{"content":[{"text":"Why?","type":"text"}],"role":"user"},` +
		`{"content":[{"text":"Let me look.","type":"text"},{"id":"toolu_1","input":{"path":"a.go"},"name":"fs_read","type":"tool_use"},{"id":"toolu_x","input":{},"name":"fs_list","type":"tool_use"}],"role":"assistant"},` +
		`{"content":[{"content":"package a","tool_use_id":"toolu_1","type":"tool_result"},{"content":"a.go b.go","tool_use_id":"toolu_x","type":"tool_result"},{"text":"Go on.","type":"text"}],"role":"user"}],` +
		`"model":"claude-other","system":"You are careful.\n\nCite files.","temperature":0.2,` +
		`"tools":[{"description":"read","input_schema":{"type":"object"},"name":"fs_read"},{"input_schema":{"properties":{},"type":"object"},"name":"fs_list"}]}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Fatalf("request\n got %s\nwant %s", b, want)
	}
	if resp.Text != "Reading it." || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "toolu_2" ||
		resp.ToolCalls[0].Args["path"] != "b.go" || resp.ToolCalls[0].Args["n"] != float64(2) {
		t.Fatalf("response %+v", resp)
	}
	if u := resp.Usage; u == nil || u.PromptTokens != 120 || u.CompletionTokens != 30 || u.TotalTokens != 150 {
		t.Fatalf("usage %+v", resp.Usage)
	}
}

// TestDefaults: the default max_tokens and model, and a conversation that
// must open with the user.
func TestDefaults(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &got)
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"hi"}]}`)
	}))
	defer srv.Close()
	m := newModel(t, srv.URL, Config{})
	if _, err := m.Infer(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleAssistant, Content: "Hello."}}}); err != nil {
		t.Fatal(err)
	}
	msgs := got["messages"].([]any)
	if got["max_tokens"] != float64(DefaultMaxTokens) || got["model"] != "claude-test" || msgs[0].(map[string]any)["role"] != "user" || len(msgs) != 2 {
		t.Fatalf("request %v", got)
	}
}

// TestFailures: what the server answers becomes a model_failed error that
// says what to check, never holds the key, and retries only what may pass.
func TestFailures(t *testing.T) {
	tests := []struct {
		name    string
		status  []int // per attempt; 200 answers a message
		body    string
		calls   int32
		wantErr string
	}{
		{"overloaded, then fine", []int{529, 200}, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 2, ""},
		{"rate limited three times", []int{429, 429, 429, 429}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, 4, "gave up after 4 attempts: 429 Too Many Requests: slow down"},
		{"bad key", []int{401}, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + key + `"}}`, 1, "check the API key in ANTHROPIC_API_KEY"},
		{"not a message", []int{200}, `{"type":"completion"}`, 1, `the reply is a "completion", not a message`},
		{"a tool_use with a list as input", []int{200}, `{"type":"message","content":[{"type":"tool_use","id":"t","name":"x","input":[1]}]}`, 1, "not an object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := n.Add(1) - 1
				st := tc.status[min(int(i), len(tc.status)-1)]
				if st == 200 && tc.wantErr == "" {
					io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"ok"}]}`)
					return
				}
				w.WriteHeader(st)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			m := newModel(t, srv.URL, Config{})
			resp, err := m.Infer(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "x"}}})
			if n.Load() != tc.calls {
				t.Fatalf("%d attempts, want %d", n.Load(), tc.calls)
			}
			if tc.wantErr == "" {
				if err != nil || resp.Text != "ok" {
					t.Fatalf("%v %+v", err, resp)
				}
				return
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.ModelFailed || !strings.Contains(e.Msg, tc.wantErr) || strings.Contains(e.Msg, key) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestNewRefusesAMissingKey(t *testing.T) {
	_, err := New(Config{Model: "claude-test", Getenv: func(string) string { return "" }})
	if errs.CodeOf(err) != errs.ConfigInvalid || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("err = %v", err)
	}
	if _, err := New(Config{Getenv: func(string) string { return key }}); errs.CodeOf(err) != errs.ConfigInvalid {
		t.Fatalf("no model: %v", err)
	}
	m, _ := New(Config{Model: "claude-test", Getenv: func(string) string { return key }})
	if s := m.String(); strings.Contains(s, key) || s != "anthropic(claude-test at https://api.anthropic.com/v1/messages)" {
		t.Fatal(s)
	}
}
