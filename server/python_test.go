package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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
