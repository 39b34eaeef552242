package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/model"
)

// reply is one canned HTTP answer of the fake server.
type reply struct {
	status int
	header map[string]string
	body   string
	hang   bool // wait for the client to give up instead of answering
}

// captured is one request as the server received it.
type captured struct {
	path   string
	header http.Header
	body   map[string]any // decoded generically, to see nulls and absent fields
}

// fake is an httptest server speaking chat completions from a list of
// replies; it records every request.
type fake struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []reply
	got     []captured
	arrived chan struct{} // one value per request
}

func newFake(t *testing.T, replies ...reply) *fake {
	t.Helper()
	f := &fake{t: t, replies: replies, arrived: make(chan struct{}, 100)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		f.t.Errorf("the client sent invalid JSON: %v: %s", err, data)
	}
	f.mu.Lock()
	f.got = append(f.got, captured{path: r.URL.Path, header: r.Header.Clone(), body: body})
	n := len(f.got)
	var rep reply
	if n <= len(f.replies) {
		rep = f.replies[n-1]
	} else {
		rep = reply{status: 500, body: `{"error":{"message":"no more replies in the fake"}}`}
	}
	f.mu.Unlock()
	f.arrived <- struct{}{}
	if rep.hang {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

func (f *fake) requests() []captured {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]captured(nil), f.got...)
}

func textReply(text string) reply {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
	})
	return reply{status: 200, body: string(b)}
}

func toolReply(id, name, arguments string) reply {
	b, _ := json.Marshal(map[string]any{
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{
			"role": "assistant", "content": nil,
			"tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": arguments}}},
		}, "finish_reason": "tool_calls"}},
	})
	return reply{status: 200, body: string(b)}
}

func newModel(t *testing.T, base string, mod func(*Config)) *Model {
	t.Helper()
	c := Config{BaseURL: base, Model: "test-model", RetryBase: time.Millisecond}
	if mod != nil {
		mod(&c)
	}
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ptr[T any](v T) *T { return &v }

func roundTrip(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func TestRequestWireFormat(t *testing.T) {
	t.Parallel()
	params := map[string]any{
		"type":       "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}},
		"required":   []any{"path"},
	}
	full := model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "be brief"},
			{Role: model.RoleUser, Content: "list files"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1_0", Name: "fs_list", Args: map[string]any{"path": "."}}}},
			{Role: model.RoleTool, Content: `{"entries":[]}`, ToolCallID: "call_1_0"},
		},
		Tools: []model.ToolSpec{{Name: "fs_list", Description: "List a directory.", Parameters: params}},
		Params: model.Params{
			Model: "override-model", Temperature: ptr(0.2), MaxTokens: ptr(100), TopP: ptr(0.9), ReasoningEffort: "low",
		},
	}
	tests := []struct {
		name     string
		cfg      func(*Config)
		req      model.Request
		wantBody map[string]any
		wantAuth string
	}{
		{
			name: "everything set",
			cfg: func(c *Config) {
				c.APIKeyEnv = "TEST_KEY"
				c.Getenv = func(k string) string { return map[string]string{"TEST_KEY": "sk-secret"}[k] }
			},
			req: full,
			wantBody: map[string]any{
				"model": "override-model",
				"messages": []any{
					map[string]any{"role": "system", "content": "be brief"},
					map[string]any{"role": "user", "content": "list files"},
					map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
						map[string]any{"id": "call_1_0", "type": "function", "function": map[string]any{"name": "fs_list", "arguments": `{"path":"."}`}},
					}},
					map[string]any{"role": "tool", "content": `{"entries":[]}`, "tool_call_id": "call_1_0"},
				},
				"tools": []any{map[string]any{"type": "function", "function": map[string]any{
					"name": "fs_list", "description": "List a directory.", "parameters": roundTrip(params),
				}}},
				"temperature": 0.2, "max_tokens": float64(100), "top_p": 0.9, "reasoning_effort": "low",
			},
			wantAuth: "Bearer sk-secret",
		},
		{
			name: "defaults, no key, no tools",
			req:  model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: ""}}},
			wantBody: map[string]any{
				"model":    "test-model",
				"messages": []any{map[string]any{"role": "user", "content": ""}},
			},
		},
		{
			name: "assistant text next to tool calls is kept",
			req: model.Request{Messages: []model.Message{
				{Role: model.RoleAssistant, Content: "looking", ToolCalls: []model.ToolCall{{ID: "x", Name: "t"}}},
			}},
			wantBody: map[string]any{
				"model": "test-model",
				"messages": []any{map[string]any{"role": "assistant", "content": "looking", "tool_calls": []any{
					map[string]any{"id": "x", "type": "function", "function": map[string]any{"name": "t", "arguments": "{}"}},
				}}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, textReply("ok"))
			m := newModel(t, f.srv.URL+"/v1/", tc.cfg)
			resp, err := m.Infer(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "ok" || !reflect.DeepEqual(resp.Usage, &model.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}) {
				t.Errorf("response %+v", resp)
			}
			got := f.requests()
			if len(got) != 1 {
				t.Fatalf("%d requests", len(got))
			}
			if got[0].path != "/v1/chat/completions" {
				t.Errorf("path %s", got[0].path)
			}
			if !reflect.DeepEqual(got[0].body, tc.wantBody) {
				gb, _ := json.MarshalIndent(got[0].body, "", " ")
				wb, _ := json.MarshalIndent(tc.wantBody, "", " ")
				t.Errorf("body\n%s\nwant\n%s", gb, wb)
			}
			if a := got[0].header.Get("Authorization"); a != tc.wantAuth {
				t.Errorf("Authorization %q, want %q", a, tc.wantAuth)
			}
			if ct := got[0].header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

func TestToolCallRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFake(t,
		toolReply("call_abc", "fs_read", `{"path": "README.md", "limit": 10, "opts": {"x": [1, true, null]}}`),
		textReply("Done."),
	)
	m := newModel(t, f.srv.URL, nil)
	ctx := context.Background()
	msgs := []model.Message{{Role: model.RoleUser, Content: "read the readme"}}

	r1, err := m.Infer(ctx, model.Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	wantCall := model.ToolCall{ID: "call_abc", Name: "fs_read", Args: map[string]any{
		"path": "README.md", "limit": float64(10), "opts": map[string]any{"x": []any{float64(1), true, nil}},
	}}
	if r1.Text != "" || len(r1.ToolCalls) != 1 || !reflect.DeepEqual(r1.ToolCalls[0], wantCall) || r1.Usage != nil {
		t.Fatalf("first reply %+v", r1)
	}

	msgs = append(msgs,
		model.Message{Role: model.RoleAssistant, ToolCalls: r1.ToolCalls},
		model.Message{Role: model.RoleTool, Content: "# readme", ToolCallID: "call_abc"},
	)
	r2, err := m.Infer(ctx, model.Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Text != "Done." || r2.ToolCalls != nil {
		t.Fatalf("second reply %+v", r2)
	}

	sent := f.requests()[1].body["messages"].([]any)
	if len(sent) != 3 {
		t.Fatalf("second request has %d messages", len(sent))
	}
	asst := sent[1].(map[string]any)
	if asst["role"] != "assistant" || asst["content"] != nil {
		t.Errorf("assistant message %v", asst)
	}
	call := asst["tool_calls"].([]any)[0].(map[string]any)
	fn := call["function"].(map[string]any)
	var args map[string]any
	if err := json.Unmarshal([]byte(fn["arguments"].(string)), &args); err != nil || call["id"] != "call_abc" ||
		fn["name"] != "fs_read" || !reflect.DeepEqual(args, wantCall.Args) {
		t.Errorf("tool call sent back as %v (%v)", call, err)
	}
	tool := sent[2].(map[string]any)
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_abc" || tool["content"] != "# readme" {
		t.Errorf("tool message %v", tool)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	e500 := reply{status: 500, body: `{"error":{"message":"upstream hiccup"}}`}
	tests := []struct {
		name      string
		replies   []reply
		cfg       func(*Config)
		wantText  string
		wantErr   []string // substrings of the error
		wantCalls int
	}{
		{
			name: "429 with Retry-After then success",
			replies: []reply{
				{status: 429, header: map[string]string{"Retry-After": "0"}, body: `{"error":{"message":"rate limited"}}`},
				textReply("ok"),
			},
			cfg:       func(c *Config) { c.RetryBase = time.Hour }, // only Retry-After: 0 lets this finish
			wantText:  "ok",
			wantCalls: 2,
		},
		{
			name:      "500 twice then success",
			replies:   []reply{e500, e500, textReply("ok")},
			wantText:  "ok",
			wantCalls: 3,
		},
		{
			name:      "400 is not retried and its message is shown",
			replies:   []reply{{status: 400, body: `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error"}}`}},
			wantErr:   []string{"model_failed", "400 Bad Request", "Invalid value for 'temperature'"},
			wantCalls: 1,
		},
		{
			name:      "a text error body is shown",
			replies:   []reply{{status: 404, body: `404 page not found`}},
			wantErr:   []string{"404 Not Found: 404 page not found (check base_url", "/chat/completions"},
			wantCalls: 1,
		},
		{
			name:      "giving up after the retries",
			replies:   []reply{e500, e500, e500, e500, e500},
			wantErr:   []string{"gave up after 4 attempts: 500 Internal Server Error: upstream hiccup"},
			wantCalls: 4,
		},
		{
			name:      "no retries",
			replies:   []reply{e500, textReply("never")},
			cfg:       func(c *Config) { c.MaxRetries = -1 },
			wantErr:   []string{"500 Internal Server Error: upstream hiccup"},
			wantCalls: 1,
		},
		{
			name:    "the key is never shown",
			replies: []reply{{status: 401, body: `{"error":{"message":"Incorrect API key provided: sk-very-secret"}}`}},
			cfg: func(c *Config) {
				c.APIKeyEnv = "K"
				c.Getenv = func(string) string { return "sk-very-secret" }
			},
			wantErr:   []string{"401 Unauthorized: Incorrect API key provided: [redacted] (check the API key in K)"},
			wantCalls: 1,
		},
		{
			name:      "a reply that is not JSON is not retried",
			replies:   []reply{{status: 200, body: `<html>proxy error</html>`}, textReply("never")},
			wantErr:   []string{"the reply is not chat-completions JSON", "<html>proxy error</html>"},
			wantCalls: 1,
		},
		{
			name:      "a reply without choices",
			replies:   []reply{{status: 200, body: `{"choices":[]}`}},
			wantErr:   []string{"the reply has no choices"},
			wantCalls: 1,
		},
		{
			name:      "an attempt that times out is retried",
			replies:   []reply{{hang: true}, textReply("ok")},
			cfg:       func(c *Config) { c.Timeout = 50 * time.Millisecond },
			wantText:  "ok",
			wantCalls: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.replies...)
			m := newModel(t, f.srv.URL, tc.cfg)
			resp, err := m.Infer(context.Background(), model.Request{Messages: []model.Message{{Role: "user", Content: "hi"}}})
			if n := len(f.requests()); n != tc.wantCalls {
				t.Errorf("%d requests, want %d", n, tc.wantCalls)
			}
			if tc.wantErr == nil {
				if err != nil || resp.Text != tc.wantText {
					t.Fatalf("got %+v, %v", resp, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; reply %+v", resp)
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.ModelFailed {
				t.Errorf("%T %v is not a model_failed *errs.Error", err, err)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "sk-very-secret") {
				t.Errorf("the key leaked: %v", err)
			}
		})
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{status: 503, body: `{}`})
	m := newModel(t, f.srv.URL, func(c *Config) { c.RetryBase = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-f.arrived
		cancel()
	}()
	_, err := m.Infer(ctx, model.Request{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests after cancelling", n)
	}
}

func TestToolCallArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		arguments json.RawMessage // the raw "arguments" field of the wire call
		want      map[string]any
		wantErr   string
	}{
		{"object in a string", json.RawMessage(`"{\"a\":1}"`), map[string]any{"a": float64(1)}, ""},
		{"empty string", json.RawMessage(`""`), map[string]any{}, ""},
		{"null", json.RawMessage(`null`), map[string]any{}, ""},
		{"a bare object (some servers)", json.RawMessage(`{"a":[1.5]}`), map[string]any{"a": []any{1.5}}, ""},
		{"broken JSON", json.RawMessage(`"{\"a\":"`), nil, `tool call "c1" (fs_read): the arguments are not valid JSON`},
		{"a list", json.RawMessage(`"[1,2]"`), nil, `tool call "c1" (fs_read): the arguments are a JSON array, not an object: [1,2]`},
		{"a string", json.RawMessage(`"\"x\""`), nil, `the arguments are a JSON string, not an object`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"fs_read","arguments":` +
				string(tc.arguments) + `}}]}}]}`
			f := newFake(t, reply{status: 200, body: body})
			m := newModel(t, f.srv.URL, nil)
			resp, err := m.Infer(context.Background(), model.Request{})
			if tc.wantErr != "" {
				if errs.CodeOf(err) != errs.ModelFailed || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want model_failed containing %q", err, tc.wantErr)
				}
				if n := len(f.requests()); n != 1 {
					t.Errorf("retried a bad reply: %d requests", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.ToolCalls[0].Args, tc.want) {
				t.Errorf("args %#v, want %#v", resp.ToolCalls[0].Args, tc.want)
			}
		})
	}
}

func TestContentForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"string", `"hello"`, "hello"},
		{"null", `null`, ""},
		{"parts", `[{"type":"text","text":"a"},{"type":"image_url","image_url":{}},{"type":"text","text":"b"}]`, "ab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, reply{status: 200, body: `{"choices":[{"message":{"role":"assistant","content":` + tc.content + `}}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`})
			resp, err := newModel(t, f.srv.URL, nil).Infer(context.Background(), model.Request{})
			if err != nil || resp.Text != tc.want {
				t.Fatalf("got %q, %v", resp.Text, err)
			}
			if resp.Usage == nil || resp.Usage.TotalTokens != 7 {
				t.Errorf("usage %+v (total should be filled in)", resp.Usage)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	noKey := func(string) string { return "" }
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no base url", Config{Model: "m"}, "base_url is required"},
		{"not a url", Config{BaseURL: "localhost:11434", Model: "m"}, `base_url "localhost:11434" is not an http(s) URL`},
		{"wrong scheme", Config{BaseURL: "ftp://host/v1", Model: "m"}, "is not an http(s) URL"},
		{"unparsable", Config{BaseURL: "http://[::1", Model: "m"}, "is not an http(s) URL"},
		{"no model", Config{BaseURL: "http://localhost:11434/v1"}, "model is required"},
		{"empty key variable", Config{BaseURL: "https://api.openai.com/v1", Model: "m", APIKeyEnv: "OPENAI_API_KEY", Getenv: noKey},
			"the environment variable OPENAI_API_KEY that api_key_env names is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg)
			if errs.CodeOf(err) != errs.ConfigInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want config_invalid containing %q", err, tc.want)
			}
		})
	}
}

func TestStringHidesTheKey(t *testing.T) {
	t.Parallel()
	m := newModel(t, "https://api.example.com/v1", func(c *Config) {
		c.APIKeyEnv = "K"
		c.Getenv = func(string) string { return "sk-hidden" }
	})
	if s := m.String(); strings.Contains(s, "sk-hidden") || s != "openai(test-model at https://api.example.com/v1/chat/completions)" {
		t.Fatal(s)
	}
}
