package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/server"
)

// runChild runs one command line in a process of its own (the test
// binary as awaken-lua, see TestMain) with stdin, in dir ("" for the
// current one), and returns its stdout, stderr and exit code.
func runChild(t *testing.T, dir string, env []string, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	raw, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if dir != "" {
		exe, err := filepath.Abs(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(exe, "-test.run=^$")
		cmd.Dir = dir
	}
	cmd.Env = append(append(os.Environ(), childEnv+"="+string(raw)), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%v did not exit: %s", args, errOut.String())
	}
	return "", "", -1
}

// recordedEvents lists testdata/agents/claude-code's events in order.
func recordedEvents(t *testing.T) (string, []string) { return agentEvents(t, "claude-code") }

func agentEvents(t *testing.T, agent string) (string, []string) {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "agents", agent)
	all, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var events []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".reply.json") {
			events = append(events, f)
		}
	}
	sort.Strings(events)
	if len(events) == 0 {
		t.Fatal("no recorded events")
	}
	return dir, events
}

func sameJSON(t *testing.T, got []byte, wantFile string) bool {
	t.Helper()
	want, err := os.ReadFile(wantFile)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return false
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}

// TestHookCommandRecordedSession sends every recorded Claude Code event
// through `awaken-lua hook` (a process per event, as Claude Code runs it)
// to a sidecar on loopback with the reference policy, and compares each
// printed reply.
func TestHookCommandRecordedSession(t *testing.T) {
	for _, agent := range []string{"claude-code", "codex", "copilot", "cursor", "gemini"} {
		t.Run(agent, func(t *testing.T) { hookSession(t, agent) })
	}
}

// referenceSidecar serves the reference policy of testdata/agents/claude-code
// on loopback until the test ends, and returns its address.
func referenceSidecar(t *testing.T) string {
	t.Helper()
	policy := filepath.Join("..", "..", "testdata", "agents", "claude-code", "policy", "awaken.toml")
	h, err := host.Open(context.Background(), host.Options{ConfigPath: policy, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(h, server.Options{HookAgent: "default", Log: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close(); h.Close() })
	return ts.URL
}

func hookSession(t *testing.T, agent string) {
	_, events := agentEvents(t, agent)
	url := referenceSidecar(t)
	for _, f := range events {
		event, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"hook", "--agent", agent, "--url", url}
		if agent == "copilot" {
			args = append(args, "--event", strings.Split(filepath.Base(f), ".")[1])
		}
		out, errOut, code := runChild(t, "", nil, event, args...)
		if code != 0 || !sameJSON(t, []byte(out), strings.TrimSuffix(f, ".json")+".reply.json") {
			t.Errorf("%s: exit %d, stdout %s, stderr %s", filepath.Base(f), code, out, errOut)
		}
	}
}

// permDeny starts the hook's fail-closed answer to a PermissionRequest:
// Claude Code does not honour exit 2 on that event, so the deny is the
// decision object, on exit 0.
const permDeny = `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"awaken-lua could not decide`

// TestHookFailsClosed: when no decision comes, a PreToolUse is denied
// (exit 2, the reason on stderr) and other events go on (exit 0, no
// output), unless --fail says otherwise.
func TestHookFailsClosed(t *testing.T) {
	dir, _ := recordedEvents(t)
	pre, _ := os.ReadFile(filepath.Join(dir, "06.pre_tool_use.bash_rm.json"))
	post, _ := os.ReadFile(filepath.Join(dir, "04.post_tool_use.write.json"))
	perm, _ := os.ReadFile(filepath.Join(dir, "08.permission_request.bash_git_push.json"))
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	// A sidecar that answers too late, and one that answers 500.
	stop := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer slow.Close()
	defer close(stop) // before Close, which waits for the handler
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }))
	defer broken.Close()
	tests := []struct {
		name   string
		event  []byte
		args   []string
		code   int
		err    string
		stdout string
	}{
		{"PreToolUse, refused", pre, []string{"--url", refused}, 2, "denied (fail closed)", ""},
		{"PreToolUse, too slow", pre, []string{"--url", slow.URL, "--timeout", "200ms"}, 2, "did not answer in time", ""},
		{"PreToolUse, 500", pre, []string{"--url", broken.URL}, 2, "answered 500", ""},
		{"PermissionRequest, refused", perm, []string{"--url", refused}, 0, "denied (fail closed)", permDeny},
		{"PermissionRequest as Codex, refused", perm, []string{"--agent", "codex", "--url", refused}, 0, "denied (fail closed)", permDeny},
		{"PostToolUse, refused", post, []string{"--url", refused}, 0, "no decision", ""},
		{"PreToolUse, --fail open", pre, []string{"--url", refused, "--fail", "open"}, 0, "no decision", ""},
		{"PostToolUse, --fail closed", post, []string{"--url", refused, "--fail", "closed"}, 2, "fail closed", ""},
		{"not JSON, fails closed with --fail closed", []byte("{"), []string{"--url", refused, "--fail", "closed"}, 2, "fail closed", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runChild(t, "", nil, tc.event, append([]string{"hook"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.err) || !hasJSONPrefix(t, out, tc.stdout) {
				t.Fatalf("exit %d (want %d), stdout %q (want %q), stderr %q (want %q)", code, tc.code, out, tc.stdout, errOut, tc.err)
			}
		})
	}
}

// hasJSONPrefix reports whether out is empty when want is, and otherwise
// one JSON object whose keys, sorted, print starting with want.
func hasJSONPrefix(t *testing.T, out, want string) bool {
	t.Helper()
	if want == "" || out == "" {
		return out == want
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Errorf("stdout is not JSON: %v", err)
		return false
	}
	b, _ := json.Marshal(v) // maps marshal with sorted keys
	return strings.HasPrefix(string(b), want)
}

// A hook command that is itself wrong (a bad flag, an unknown agent) still
// reads its event: a tool-permission event is denied the way the agent
// reads a deny, and any other goes on with exit 1 (a non-blocking error),
// never exit 2, which would block a prompt or keep a Stop going. stderr's
// first line says what is wrong, without the usage text.
func TestHookMisconfigured(t *testing.T) {
	dir, _ := recordedEvents(t)
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pre := read(dir, "06.pre_tool_use.bash_rm.json")
	perm := read(dir, "08.permission_request.bash_git_push.json")
	stop := read(dir, "11.stop.first.json")
	prompt := read(dir, "02.user_prompt_submit.json")
	cdir, _ := agentEvents(t, "cursor")
	shell := read(cdir, "06.before_shell_execution.rm.json")
	gdir, _ := agentEvents(t, "gemini")
	gemini := read(gdir, "05.before_tool.shell_rm.json")
	pdir, _ := agentEvents(t, "copilot")
	copilot := read(pdir, "05.preToolUse.bash_rm.json")
	for _, tc := range []struct {
		name   string
		event  []byte
		args   []string
		code   int
		err    string
		stdout string
	}{
		{"PreToolUse, bad duration", pre, []string{"--timeout", "5x"}, 2, "invalid value", ""},
		{"PreToolUse, unknown flag", pre, []string{"--urll", "http://x"}, 2, "not defined", ""},
		{"PreToolUse, unknown agent", pre, []string{"--agent", "claudecode"}, 2, "not a supported agent", ""},
		{"PermissionRequest, bad --fail", perm, []string{"--fail", "shut"}, 0, "--fail is closed or open", permDeny},
		{"Stop, bad duration", stop, []string{"--timeout", "5x"}, 1, "invalid value", ""},
		{"UserPromptSubmit, stray argument", prompt, []string{"extra"}, 1, "unexpected argument", ""},
		{"UserPromptSubmit, unknown agent", prompt, []string{"--agent", "claudecode"}, 1, "not a supported agent", ""},
		{"Cursor shell, bad --suspend", shell, []string{"--agent", "cursor", "--suspend", "defer"}, 0, "--suspend is for", `{"agent_message":"awaken-lua could not decide`},
		{"not JSON, bad flag", []byte("{"), []string{"--timeout", "5x"}, 2, "invalid value", ""},
		// A bad flag stops parsing: the agent after it is still the one
		// whose deny is given.
		{"Cursor shell, bad flag before --agent", shell, []string{"--timeout=bogus", "--agent", "cursor"}, 0, "invalid value", `{"agent_message":"awaken-lua could not decide`},
		{"Gemini tool, unknown flag before --agent", gemini, []string{"--timout", "5s", "--agent=gemini"}, 2, "not defined", ""},
		{"Gemini tool, bad flag, no --agent", gemini, []string{"--timout", "5s"}, 2, "not defined", ""},
		{"PermissionRequest, bad flag", perm, []string{"--timeout", "5x"}, 0, "invalid value", permDeny},
		{"Cursor shell, --agent read before a bad flag", shell, []string{"--agent", "cursor", "--as", "agent", "--timeout", "5x"}, 0, "invalid value", `{"agent_message":"awaken-lua could not decide`},
		// Copilot's input names no event, and Copilot skips a hook that
		// fails: the deny goes on stdout, in both of its formats.
		{"Copilot, bad flag", copilot, []string{"--agent", "copilot", "--timeout", "5x"}, 0, "invalid value",
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runChild(t, "", nil, tc.event, append([]string{"hook"}, tc.args...)...)
			first, _, _ := strings.Cut(errOut, "\n")
			if code != tc.code || !strings.Contains(first, tc.err) || !hasJSONPrefix(t, out, tc.stdout) || strings.Contains(errOut, "usage:") {
				t.Fatalf("exit %d (want %d), stdout %q (want %q), stderr %q (want %q on its first line, no usage)", code, tc.code, out, tc.stdout, errOut, tc.err)
			}
		})
	}
	// Asked for, the usage is still there.
	if out, errOut, code := runChild(t, "", nil, nil, "hook", "-h"); code != exitOK || !strings.Contains(out+errOut, "usage: awaken-lua hook") {
		t.Errorf("hook -h: exit %d, %s%s", code, out, errOut)
	}
}

// Without --url or $AWAKEN_URL the hook finds the sidecar at the [server]
// addr of the project's awaken.toml, with the token of its token_env; a
// broken awaken.toml is not guessed past.
func TestHookFindsSidecarInConfig(t *testing.T) {
	dir, _ := recordedEvents(t)
	pre, _ := os.ReadFile(filepath.Join(dir, "06.pre_tool_use.bash_rm.json"))
	type seen struct{ path, auth string }
	got := make(chan seen, 4)
	sidecar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.URL.Path, r.Header.Get("Authorization")}
		w.Write([]byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"from the sidecar"}}`))
	}))
	defer sidecar.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(sidecar.URL, "http://"))
	env := []string{"AWAKEN_URL=", "AWAKEN_TOKEN=wrong", "MY_TOKEN=s3cret"}
	for _, host := range []string{"127.0.0.1", ""} {
		work := t.TempDir()
		cfg := "[server]\naddr = \"" + host + ":" + port + "\"\ntoken_env = \"MY_TOKEN\"\n"
		if err := os.WriteFile(filepath.Join(work, "awaken.toml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runChild(t, work, env, pre, "hook")
		if code != 0 || !strings.Contains(out, "from the sidecar") {
			t.Fatalf("[server] addr %s:%s: exit %d, stdout %q, stderr %q", host, port, code, out, errOut)
		}
		if s := <-got; s.path != "/v1/hooks/claude-code" || s.auth != "Bearer s3cret" {
			t.Fatalf("[server] addr %s: the sidecar saw %+v", host, s)
		}
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "awaken.toml"), []byte("[server]\naddr = 7878\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runChild(t, work, env, pre, "hook")
	if code != 2 || out != "" || !strings.Contains(errOut, "awaken.toml:2") {
		t.Fatalf("a broken awaken.toml: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// --url names the sidecar itself: the broken file is not needed.
	if out, errOut, code := runChild(t, work, env, pre, "hook", "--url", sidecar.URL); code != 0 || !strings.Contains(out, "from the sidecar") {
		t.Fatalf("--url past a broken awaken.toml: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if s := <-got; s.auth != "Bearer wrong" {
		t.Fatalf("past a broken awaken.toml the token is $AWAKEN_TOKEN's: %+v", s)
	}
}

// A Cursor tool-permission event that gets no decision is denied in the
// JSON Cursor reads (exit 0); other Cursor events go on.
func TestHookFailsClosedForCursor(t *testing.T) {
	dir, _ := agentEvents(t, "cursor")
	shell, _ := os.ReadFile(filepath.Join(dir, "06.before_shell_execution.rm.json"))
	prompt, _ := os.ReadFile(filepath.Join(dir, "02.before_submit_prompt.json"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	out, errOut, code := runChild(t, "", nil, shell, "hook", "--agent", "cursor", "--url", refused)
	var reply map[string]string
	json.Unmarshal([]byte(out), &reply)
	if code != 0 || reply["permission"] != "deny" || !strings.Contains(reply["agent_message"], "fail closed") {
		t.Fatalf("beforeShellExecution without a sidecar: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, _, code := runChild(t, "", nil, prompt, "hook", "--agent", "cursor", "--url", refused); code != 0 || out != "" {
		t.Fatalf("beforeSubmitPrompt without a sidecar: exit %d, stdout %q", code, out)
	}
}

// Every agent's tool-permission event fails closed in the way that agent
// reads: exit 2 with the reason on stderr (Codex, Gemini CLI), a deny in
// the JSON on stdout (Copilot CLI); Copilot needs its event named.
func TestHookFailsClosedForEveryAgent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	read := func(agent, name string) []byte {
		dir, _ := agentEvents(t, agent)
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		agent, file string
		extra       []string
		code        int
		stdout      string
	}{
		{"codex", "05.pre_tool_use.shell_rm.json", nil, 2, ""},
		{"gemini", "05.before_tool.shell_rm.json", nil, 2, ""},
		{"copilot", "05.preToolUse.bash_rm.json", []string{"--event", "preToolUse"}, 0, `"permissionDecision":"deny"`},
	} {
		args := append([]string{"hook", "--agent", tc.agent, "--url", refused}, tc.extra...)
		out, errOut, code := runChild(t, "", nil, read(tc.agent, tc.file), args...)
		if code != tc.code || !strings.Contains(errOut, "fail closed") || (tc.stdout == "" && out != "") || !strings.Contains(out, tc.stdout) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.agent, code, out, errOut)
		}
	}
	// Gemini CLI under its own name fails closed the same way.
	if out, errOut, code := runChild(t, "", nil, read("gemini", "05.before_tool.shell_rm.json"), "hook", "--agent", "gemini-cli", "--url", refused); code != 2 || out != "" || !strings.Contains(errOut, "fail closed") {
		t.Errorf("gemini-cli: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Copilot CLI skips a hook that fails: a hook command without the
	// --event it needs denies on stdout.
	out, errOut, code := runChild(t, "", nil, read("copilot", "05.preToolUse.bash_rm.json"), "hook", "--agent", "copilot", "--url", refused)
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(errOut, "--event") {
		t.Errorf("copilot without --event: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The input's own event name wins over --event, as in the sidecar.
	pre := read("claude-code", "06.pre_tool_use.bash_rm.json")
	if out, errOut, code := runChild(t, "", nil, pre, "hook", "--event", "Notification", "--url", refused); code != 2 || !strings.Contains(errOut, "fail closed") {
		t.Errorf("a PreToolUse under --event Notification: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Past the hook's size limit the input does not parse: --event names
	// it, else the name read before the cut does.
	big, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": "/tmp", "hook_event_name": "PreToolUse", "tool_name": "Write",
		"tool_use_id": "t1", "tool_input": map[string]any{"file_path": "/tmp/big", "content": strings.Repeat("x", maxHookEvent)}})
	for _, extra := range [][]string{nil, {"--event", "PreToolUse"}} {
		args := append([]string{"hook", "--url", refused}, extra...)
		if out, errOut, code := runChild(t, "", nil, big, args...); code != 2 || !strings.Contains(errOut, "fail closed") {
			t.Errorf("a PreToolUse over %d bytes %v: exit %d, stdout %q, stderr %q", maxHookEvent, extra, code, out, errOut)
		}
	}
}

// TestHookLocal decides in-process, with the file store: a denied command
// is denied without a sidecar, and thread state reaches the next event's
// process.
func TestHookLocal(t *testing.T) {
	dir, _ := recordedEvents(t)
	policy, _ := filepath.Abs(filepath.Join(dir, "policy"))
	work := t.TempDir()
	script, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "scenarios", "demo.toml"))
	cfg := "plugin_dir = " + quote(policy) + "\n\n[model]\nkind = \"scripted\"\nscript = " + quote(script) +
		"\n\n[store]\nkind = \"file\"\npath = \"state\"\n\n[audit]\npath = \"\"\n\n[agents.default]\nplugins = [\"reference\"]\ntools = []\n"
	if err := os.WriteFile(filepath.Join(work, "awaken.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prompt, _ := os.ReadFile(filepath.Join(dir, "02.user_prompt_submit.json"))
	if out, errOut, code := runChild(t, work, nil, prompt, "hook", "--local"); code != 0 || !sameJSON(t, []byte(out), filepath.Join(dir, "02.user_prompt_submit.reply.json")) {
		t.Fatalf("prompt: exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	pre, _ := os.ReadFile(filepath.Join(dir, "06.pre_tool_use.bash_rm.json"))
	out, errOut, code := runChild(t, work, nil, pre, "hook", "--local")
	if code != 0 || !sameJSON(t, []byte(out), filepath.Join(dir, "06.pre_tool_use.bash_rm.reply.json")) {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	if runs, err := filepath.Glob(filepath.Join(work, "state", "*", "*")); err != nil || len(runs) == 0 {
		t.Fatalf("the file store keeps the session where awaken.toml says: %v %v", runs, err)
	}
	// An event that does not parse is the one --event names: a
	// PreToolUse is denied, not let through with {}.
	out, errOut, code = runChild(t, work, nil, []byte("not json"), "hook", "--local", "--event", "PreToolUse")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "not valid JSON") {
		t.Fatalf("not JSON, --event PreToolUse: exit %d, stdout %s, stderr %s", code, out, errOut)
	}
}

// TestHookLocalParallel runs the PreToolUse hooks of parallel tool calls
// as a coding agent does, each `hook --local` a process of its own on one
// file store: none may fail the others' saves (a process that starts
// removes temp files a crash left, and once removed those of a save in
// progress) or lose them, so each call gets the decision it gets alone.
func TestHookLocalParallel(t *testing.T) {
	dir, _ := recordedEvents(t)
	work := localProject(t, filepath.Join(dir, "policy"))
	prompt, _ := os.ReadFile(filepath.Join(dir, "02.user_prompt_submit.json"))
	if out, errOut, code := runChild(t, work, nil, prompt, "hook", "--local"); code != 0 {
		t.Fatalf("prompt: exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	var event map[string]any
	raw, _ := os.ReadFile(filepath.Join(dir, "09.pre_tool_use.bash_npm_test.json"))
	if err := json.Unmarshal(raw, &event); err != nil {
		t.Fatal(err)
	}
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{"hook", "--local"})
	const n = 12
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	for i := range cmds {
		event["tool_use_id"] = fmt.Sprint("toolu_parallel_", i)
		body, _ := json.Marshal(event)
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Dir, cmd.Env, cmd.Stdin = work, append(os.Environ(), childEnv+"="+string(args)), bytes.NewReader(body)
		outs[i] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		err := cmd.Wait()
		if got := strings.TrimSpace(outs[i].String()); err != nil || got != "{}" {
			t.Errorf("call %d of %d in parallel: %v, output %s", i, n, err, got)
		}
	}
	if aside, _ := filepath.Glob(filepath.Join(work, "state", "*", "*.corrupt-*")); len(aside) > 0 {
		t.Errorf("files set aside: %v", aside)
	}
}

// hook --local where there is no awaken.toml (the agent may run hooks in a
// subdirectory) has no policy to ask: a PreToolUse is denied saying so,
// not let through by a run without plugins.
func TestHookLocalWithoutConfig(t *testing.T) {
	dir, _ := recordedEvents(t)
	pre, _ := os.ReadFile(filepath.Join(dir, "06.pre_tool_use.bash_rm.json"))
	work := t.TempDir()
	out, errOut, code := runChild(t, work, nil, pre, "hook", "--local")
	if code != 2 || !strings.Contains(errOut, "config_invalid") || !strings.Contains(errOut, "no awaken.toml in") {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("hook --local left %d files where it ran", len(left))
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestInstallCommand installs into scratch settings: a fresh project, a
// file with the user's own hooks, a second install, then an uninstall.
// install names the agent a typo meant.
func TestInstallSuggestsTheAgent(t *testing.T) {
	code, _, errOut := awaken(t, "", "install", "claude-cod")
	if code != exitUsage || !strings.Contains(errOut, `"claude-cod" is not a supported agent (did you mean "claude-code"?)`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestInstallCommand(t *testing.T) {
	work := t.TempDir()
	settings := filepath.Join(work, ".claude", "settings.json")
	read := func() map[string]any {
		t.Helper()
		b, err := os.ReadFile(settings)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	user := `{"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}]}}`
	if err := os.WriteFile(settings, []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runChild(t, work, nil, nil, "install", "claude-code")
	if code != 0 || !strings.Contains(out, "hooks added") || !strings.Contains(out, "kept as") {
		t.Fatalf("install: exit %d %s %s", code, out, errOut)
	}
	m := read()
	if m["model"] != "opus" || !strings.Contains(mustMarshal(m), "./lint.sh") || !strings.Contains(mustMarshal(m), "awaken-lua hook --agent claude-code") {
		t.Fatalf("settings after install: %s", mustMarshal(m))
	}
	for _, ev := range []string{"SessionStart", "PreToolUse", "Stop"} {
		if _, ok := m["hooks"].(map[string]any)[ev]; !ok {
			t.Fatalf("no %s hook: %s", ev, mustMarshal(m))
		}
	}
	before, _ := os.ReadFile(settings)
	out, _, code = runChild(t, work, nil, nil, "install", "claude-code")
	after, _ := os.ReadFile(settings)
	if code != 0 || !strings.Contains(out, "already up to date") || !bytes.Equal(before, after) {
		t.Fatalf("a second install changes nothing: exit %d %s", code, out)
	}
	out, _, code = runChild(t, work, nil, nil, "install", "claude-code", "--uninstall")
	if code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("uninstall: exit %d %s", code, out)
	}
	m = read()
	if strings.Contains(mustMarshal(m), "awaken-lua") || !strings.Contains(mustMarshal(m), "./lint.sh") {
		t.Fatalf("after uninstall only the user's hooks stay: %s", mustMarshal(m))
	}
	// The user scope goes where $CLAUDE_CONFIG_DIR says, in an empty file.
	cfgDir := t.TempDir()
	out, errOut, code = runChild(t, work, []string{"CLAUDE_CONFIG_DIR=" + cfgDir}, nil, "install", "claude-code", "--scope", "user", "--http")
	if code != 0 {
		t.Fatalf("user install: exit %d %s %s", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(cfgDir, "settings.json"))
	if err != nil || !strings.Contains(string(b), "/v1/hooks/claude-code") {
		t.Fatalf("user settings: %s %v", b, err)
	}
	if _, _, code := runChild(t, work, nil, nil, "install", "codex-cli"); code != 2 {
		t.Fatalf("an unsupported agent is a usage error, exit %d", code)
	}
}

func mustMarshal(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestHookSuspendDefer: --suspend defer asks the sidecar to defer what a
// plugin suspends (a headless claude -p), and is refused where it cannot
// work.
func TestHookSuspendDefer(t *testing.T) {
	dir, _ := recordedEvents(t)
	url := referenceSidecar(t)
	prompt, _ := os.ReadFile(filepath.Join(dir, "02.user_prompt_submit.json"))
	push, _ := os.ReadFile(filepath.Join(dir, "07.pre_tool_use.bash_git_push.json"))
	if _, errOut, code := runChild(t, "", nil, prompt, "hook", "--url", url, "--suspend", "defer"); code != 0 {
		t.Fatalf("prompt: exit %d, %s", code, errOut)
	}
	out, errOut, code := runChild(t, "", nil, push, "hook", "--url", url, "--suspend", "defer")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"defer"`) {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	for _, bad := range [][]string{
		{"--suspend", "later"}, {"--suspend", "defer", "--local"}, {"--suspend", "defer", "--agent", "codex"},
	} {
		if _, errOut, code := runChild(t, "", nil, push, append([]string{"hook", "--url", url}, bad...)...); code != exitUsage || !strings.Contains(errOut, "--suspend") {
			t.Errorf("%v: exit %d, %s", bad, code, errOut)
		}
	}
}

// lenientFlag reads a flag the flag package did not reach, and nothing
// that only looks like one.
func TestLenientFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "5x", "--agent", "cursor"}, "cursor"},
		{[]string{"--timeout", "5x", "-agent=gemini"}, "gemini"},
		{[]string{"--as", "agent", "--timeout", "5x"}, ""},
		{[]string{"--timeout", "5x", "agent", "x"}, ""},
		{[]string{"-agent", "--timeout=5x"}, ""},
		{[]string{"--", "--agent", "cursor"}, ""},
		{[]string{"--agent="}, ""},
	} {
		if got := lenientFlag(tc.args, "agent"); got != tc.want {
			t.Errorf("lenientFlag(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// A pasted permissions block without project_dir decides each hook event
// in its own process (hook --local, the file store between them) at the
// directory the event reports, and the journal replays to the same
// decisions: Read(./.env) is the cwd's .env, and an event without a cwd
// is denied, closed.
func TestHookLocalAnchorsAtCwd(t *testing.T) {
	const cfg = `plugin_dir = "scripts"
[store]
kind = "file"
path = "state"
[audit]
path = ""
[journal]
path = "journal"
[agents.default]
plugins = ["permission"]
tools = []
[plugins.permission]
default = "allow"
[plugins.permission.claude_code]
deny = ["Read(./.env)"]
`
	work := project(t, cfg, map[string]string{"scripts/noop.lua": `return require("awaken").plugin {}`})
	for i, tc := range []struct {
		cwd, file string
		deny      bool
	}{
		{"/home/dev/shop", "/home/dev/shop/.env", true},
		{"/home/dev/shop", "/home/dev/shop/src/a.go", false},
		{"/home/dev/shop/api", "/home/dev/shop/.env", false},
		{"", "/home/dev/shop/src/a.go", true},
	} {
		ev := map[string]any{"session_id": "local", "hook_event_name": "PreToolUse", "tool_name": "Read",
			"tool_input": map[string]any{"file_path": tc.file}, "tool_use_id": "toolu_" + itoa(i)}
		if tc.cwd != "" {
			ev["cwd"] = tc.cwd
		}
		body, _ := json.Marshal(ev)
		out, errOut, code := runChild(t, work, nil, body, "hook", "--local")
		denied := strings.Contains(out, `"permissionDecision":"deny"`)
		if code != 0 || denied != tc.deny || (denied && !strings.Contains(out, `Read(./.env)`)) {
			t.Fatalf("%s in %q: exit %d, stdout %s, stderr %s; want deny %v", tc.file, tc.cwd, code, out, errOut, tc.deny)
		}
	}
	var gates []string
	if _, err := journal.Read([]string{filepath.Join(work, "journal")}, func(_ journal.Pos, r *journal.Record) error {
		if r.Phase == journal.ToolGate {
			gates = append(gates, r.Input.Cwd+" "+r.Decisions[0].Decision.String())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/home/dev/shop block", "/home/dev/shop allow", "/home/dev/shop/api allow", " block"}; !slices.Equal(gates, want) {
		t.Fatalf("the journal's gates: %q, want %q", gates, want)
	}
	code, out, errOut := awaken(t, "", "--config", filepath.Join(work, "awaken.toml"), "replay")
	if code != exitOK || !strings.Contains(out, "no flips: ") {
		t.Fatalf("replay: exit %d: %s %s", code, out, errOut)
	}
}

// Cursor's beforeReadFile carries the file's content: the hook leaves it
// out (the adapter never reads it), so a file past the hook's size limit
// is still decided by its path rather than failing as too large.
func TestHookCursorLeavesContentOut(t *testing.T) {
	got := make(chan []byte, 1)
	sidecar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"permission":"allow"}`))
	}))
	defer sidecar.Close()
	ev, _ := json.Marshal(map[string]any{"conversation_id": "c", "generation_id": "g", "hook_event_name": "beforeReadFile",
		"workspace_roots": []string{"/home/dev/shop"}, "file_path": "/home/dev/shop/package-lock.json",
		"content": strings.Repeat("x", maxHookEvent+1)})
	out, errOut, code := runChild(t, "", nil, ev, "hook", "--agent", "cursor", "--url", sidecar.URL)
	if code != 0 || !strings.Contains(out, `"permission":"allow"`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b := <-got; bytes.Contains(b, []byte(`"content"`)) || !bytes.Contains(b, []byte(`"file_path":"/home/dev/shop/package-lock.json"`)) {
		t.Fatalf("the sidecar got %.300s", b)
	}
}

// localProject makes a project for hook --local in a temp dir: the
// plugins of policy, the file store in state/, no audit file; it returns
// the project's directory.
func localProject(t *testing.T, policy string) string {
	t.Helper()
	policy, err := filepath.Abs(policy)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	// A hook's budget far above the default 100 ms: the tests run up to
	// 16 processes at once on the race detector, where a hook can take
	// longer than that, and its timeout would deny the call (fail closed)
	// for a reason that is not the one under test.
	cfg := "plugin_dir = " + quote(policy) + "\n\n[store]\nkind = \"file\"\npath = \"state\"\n\n[audit]\npath = \"\"\n\n" +
		"[runtime]\nhook_timeout = \"10s\"\n\n[agents.default]\nplugins = [\"reference\"]\ntools = []\n"
	if err := os.WriteFile(filepath.Join(work, "awaken.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return work
}

// The hook command gets the adapters' mapping of other agents' tools:
// Cursor's preToolUse Shell is decided as Bash, so the reference policy's
// Bash(rm *) denies it in the JSON Cursor reads, as it does
// beforeShellExecution.
func TestHookCursorShellIsBash(t *testing.T) {
	url := referenceSidecar(t)
	for _, tc := range []struct {
		name  string
		event map[string]any
		deny  bool
	}{
		{"preToolUse rm", map[string]any{"hook_event_name": "preToolUse", "tool_name": "Shell",
			"tool_input": map[string]any{"command": "rm -rf dist", "working_directory": "/home/dev/shop"}}, true},
		{"preToolUse ls", map[string]any{"hook_event_name": "preToolUse", "tool_name": "Shell",
			"tool_input": map[string]any{"command": "ls"}}, false},
		{"beforeShellExecution rm", map[string]any{"hook_event_name": "beforeShellExecution", "command": "rm -rf dist"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := map[string]any{"conversation_id": "hook-shell-" + strings.ReplaceAll(tc.name, " ", "-"), "generation_id": "g-1",
				"workspace_roots": []string{"/home/dev/shop"}, "cwd": "/home/dev/shop", "tool_use_id": "tu-1"}
			for k, v := range tc.event {
				ev[k] = v
			}
			body, _ := json.Marshal(ev)
			out, errOut, code := runChild(t, "", nil, body, "hook", "--agent", "cursor", "--url", url)
			var reply map[string]string
			if err := json.Unmarshal([]byte(out), &reply); err != nil || code != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if denied := reply["permission"] == "deny"; denied != tc.deny {
				t.Fatalf("denied=%v, want %v: %s", denied, tc.deny, out)
			}
		})
	}
}
