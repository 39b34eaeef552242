package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWithTheAnthropicModel runs an agent against a local server that
// speaks the Messages API: the model reads a file with a tool, then answers.
func TestRunWithTheAnthropicModel(t *testing.T) {
	turn := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("x-api-key") != "k-test" || !bytes.Contains(b, []byte(`"name":"fs_read"`)) {
			http.Error(w, `{"type":"error","error":{"message":"bad request"}}`, 400)
			return
		}
		turn++
		if turn == 1 {
			io.WriteString(w, `{"type":"message","content":[{"type":"tool_use","id":"toolu_1","name":"fs_read","input":{"path":"notes.txt"}}],"usage":{"input_tokens":10,"output_tokens":5}}`)
			return
		}
		if !bytes.Contains(b, []byte(`"tool_result"`)) || !bytes.Contains(b, []byte("remember the milk")) {
			http.Error(w, `{"type":"error","error":{"message":"no tool result"}}`, 400)
			return
		}
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"The note says: remember the milk."}]}`)
	}))
	defer srv.Close()
	t.Setenv("TEST_ANTHROPIC_KEY", "k-test")
	dir := project(t, `plugin_dir = "scripts"
[model]
kind = "anthropic"
base_url = "`+srv.URL+`/v1"
model = "claude-test"
api_key_env = "TEST_ANTHROPIC_KEY"
[tools]
root = "."
[agents.default]
tools = ["fs_read"]
`, map[string]string{"notes.txt": "remember the milk", "scripts/.keep": ""})
	var out, errOut bytes.Buffer
	code := cli(context.Background(), []string{"--config", filepath.Join(dir, "awaken.toml"), "run", "what does the note say?"}, strings.NewReader(""), &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "remember the milk.") || !strings.Contains(out.String(), "finish natural") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
}

// TestRunSaysWhenTheModelIsRetried: a model that answers 529 (overloaded)
// once is retried, and run says so on stderr while it waits.
func TestRunSaysWhenTheModelIsRetried(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 1 {
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"fine"}]}`)
	}))
	defer srv.Close()
	t.Setenv("TEST_ANTHROPIC_KEY", "k-test")
	dir := project(t, "plugin_dir = \"scripts\"\n[model]\nkind = \"anthropic\"\nbase_url = \""+srv.URL+"\"\nmodel = \"m\"\napi_key_env = \"TEST_ANTHROPIC_KEY\"\n[agents.default]\ntools = []\n",
		map[string]string{"scripts/.keep": ""})
	var out, errOut bytes.Buffer
	code := cli(context.Background(), []string{"--config", filepath.Join(dir, "awaken.toml"), "run", "hi"}, strings.NewReader(""), &out, &errOut)
	if code != 0 || calls != 2 || !strings.Contains(errOut.String(), "retry 1 in") || !strings.Contains(errOut.String(), "Overloaded") {
		t.Fatalf("exit %d, %d calls\n%s\n%s", code, calls, out.String(), errOut.String())
	}
}
