package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// askLua suspends the word count, so the client's resume path runs too.
const askLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "ask" }
p:tool_gate(function(ctx, call)
  if call.name == "fs_read" and call.args.path == ".env" then
    return awaken.set_result(awaken.error("secrets are off limits"))
  end
  if call.name == "word_count" and not call.resume then
    return awaken.suspend { message = "count the words?" }
  end
end)
return p
`

// examples/python/client.py drives a whole run against a real server with
// a token; its output shows the decisions and the termination.
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is not on PATH; install Python 3 (.ci/run does) to run examples/python/client.py against the sidecar")
	}
	script, err := filepath.Abs(filepath.Join("..", "examples", "python", "client.py"))
	if err != nil {
		t.Fatal(err)
	}
	sc := newSidecar(t, project(t, "", map[string]string{"ask.lua": askLua}), Options{Log: quietLog(), Token: "py-token"})
	for _, tc := range []struct {
		approve string
		want    []string
	}{
		{"all", []string{
			"step 1: 1 messages, 2 tools offered; the model calls fs_read, word_count",
			"  gate fs_read -> set_result: error: secrets are off limits",
			"  tool fs_read -> error: secrets are off limits",
			"  gate word_count -> suspend: count the words?",
			"  ticket ticket_call_2: count the words?",
			"  resumed call_2",
			"  gate word_count -> allow",
			"  tool word_count -> success: 4",
			"step 2: ",
			"termination: natural",
			"status done after 2 steps",
		}},
		{"none", []string{
			"  gate word_count -> suspend: count the words?",
			"  cancelled call_2",
			"termination: natural",
		}},
	} {
		t.Run("approve "+tc.approve, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, script, "--url", sc.ts.URL, "--approve", tc.approve)
			cmd.Env = append(os.Environ(), "AWAKEN_TOKEN=py-token")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("client.py: %v\n%s", err, out)
			}
			text := string(out)
			at := 0
			for _, w := range tc.want {
				i := strings.Index(text[at:], w)
				if i < 0 {
					t.Fatalf("the output lacks %q (in order):\n%s", w, text)
				}
				at += i + len(w)
			}
		})
	}
	t.Run("wrong token", func(t *testing.T) {
		cmd := exec.Command(python, script, "--url", sc.ts.URL, "--token", "nope")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "401 unauthorized") {
			t.Fatalf("want a 401 from the client, got %v:\n%s", err, out)
		}
	})
}

// TestPythonReadmeOutput runs examples/python/client.py against a sidecar
// on the repository's default configuration and compares what it prints
// with the output examples/python/README.md shows (ids aside).
func TestPythonReadmeOutput(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is not on PATH; install Python 3 (.ci/run does)")
	}
	root, _ := filepath.Abs("..")
	b, err := os.ReadFile(filepath.Join(root, "awaken.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// The repository's configuration, its paths made absolute, without an
	// audit file (the test writes nothing into the repository).
	cfg := string(b)
	for _, rel := range []string{`plugin_dir = "scripts"`, `script = "testdata/scenarios/demo.toml"`, `root = "testdata/workspace"`} {
		k, v, _ := strings.Cut(rel, " = ")
		abs := filepath.Join(root, strings.Trim(v, `"`))
		if !strings.Contains(cfg, rel) {
			t.Fatalf("awaken.toml no longer has %s", rel)
		}
		cfg = strings.Replace(cfg, rel, k+" = "+strconv.Quote(abs), 1)
	}
	cfg = strings.Replace(cfg, `path = ".awaken/audit.jsonl"`, `path = ""`, 1)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "awaken.toml"), cfg)
	sc := newSidecar(t, dir, Options{Log: quietLog()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, filepath.Join(root, "examples", "python", "client.py"), "--url", sc.ts.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("client.py: %v\n%s", err, out)
	}
	readme, err := os.ReadFile(filepath.Join(root, "examples", "python", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ids := regexp.MustCompile(`(run|thread)_[0-9a-f]{16}`)
	got := strings.TrimSpace(ids.ReplaceAllString(string(out), "${1}_ID"))
	doc := ids.ReplaceAllString(string(readme), "${1}_ID")
	if !strings.Contains(doc, "```\n"+got+"\n```") {
		t.Fatalf("examples/python/README.md does not show what the client prints now:\n%s", got)
	}
}

// The sidecar answers 429 overloaded and 503 store_unavailable with
// Retry-After, and says the call changed nothing and may be retried:
// examples/python/client.py retries them instead of giving up on the run.
func TestPythonClientRetries(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is not on PATH; install Python 3 (.ci/run does)")
	}
	script, err := filepath.Abs(filepath.Join("..", "examples", "python", "client.py"))
	if err != nil {
		t.Fatal(err)
	}
	sc := newSidecar(t, project(t, "", map[string]string{"ask.lua": askLua}), Options{Log: quietLog()})
	// In front of the sidecar: the first POST /v1/runs is refused as an
	// overloaded sidecar refuses it, the first tool_gate as a failed store
	// save is, each before the sidecar sees it.
	refused := map[string]*apiError{
		"/v1/runs":  fail(http.StatusTooManyRequests, errs.Overloaded, "1 requests are being served"),
		"tool_gate": storeUnavailable(errors.New("disk full")),
	}
	refused["/v1/runs"].retryAfter = "1"
	var mu sync.Mutex
	seen := map[string]int{}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Path
		if strings.HasSuffix(key, "/tool_gate") {
			key = "tool_gate"
		}
		mu.Lock()
		seen[key]++
		first := seen[key] == 1
		mu.Unlock()
		if e, ok := refused[key]; ok && first {
			sc.srv.writeProblem(w, r, e)
			return
		}
		sc.srv.ServeHTTP(w, r)
	}))
	defer front.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, script, "--url", front.URL, "--approve", "all").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "termination: natural") {
		t.Fatalf("client.py gave up on a refusal it may retry: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["/v1/runs"] != 2 || seen["tool_gate"] < 2 {
		t.Fatalf("requests seen: %v; want POST /v1/runs twice and tool_gate at least twice", seen)
	}
}
