package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/server"
	"github.com/awaken-lua/awaken-lua/store/filestore"
)

// TestHookLocalParallelOneSession runs the PreToolUse hooks of many
// parallel tool calls of ONE session, each `hook --local` a process of its
// own on one file store, for Claude Code and Gemini CLI: half are denied
// by the policy, and each of those ends its run and saves the session's
// thread. Every call must get the decision it gets alone (the policy's
// deny, or none), never a fail-closed deny because another event saved
// the thread first, and every thread save must be kept.
func TestHookLocalParallelOneSession(t *testing.T) {
	dir, _ := recordedEvents(t)
	policy, _ := filepath.Abs(filepath.Join(dir, "policy"))
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		agent, prompt, allowed, blocked string
		allowedReply                    string
	}{
		{"claude-code", "02.user_prompt_submit.json", "09.pre_tool_use.bash_npm_test.json", "06.pre_tool_use.bash_rm.json", "{}"},
		{"gemini", "02.before_agent.json", "03.before_tool.read_file.json", "05.before_tool.shell_rm.json", "{}"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			events, _ := agentEvents(t, tc.agent)
			work := localProject(t, policy)
			read := func(name string) map[string]any {
				var m map[string]any
				raw, _ := os.ReadFile(filepath.Join(events, name))
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
			prompt, _ := json.Marshal(read(tc.prompt))
			args := []string{"hook", "--local", "--agent", tc.agent}
			if out, errOut, code := runChild(t, work, nil, prompt, args...); code != 0 {
				t.Fatalf("prompt: exit %d, stdout %s, stderr %s", code, out, errOut)
			}
			rawArgs, _ := json.Marshal(args)
			const n = 16
			type child struct {
				cmd     *exec.Cmd
				out     bytes.Buffer
				blocked bool
			}
			children := make([]*child, n)
			for i := range children {
				c := &child{blocked: i%2 == 1}
				ev := read(tc.allowed)
				if c.blocked {
					ev = read(tc.blocked)
					ev["tool_input"].(map[string]any)["command"] = fmt.Sprint("rm -rf dist", i)
				} else if tc.agent == "gemini" { // Gemini names a call by its tool and input
					ev["tool_input"].(map[string]any)["absolute_path"] = fmt.Sprint("/home/dev/shop/src/f", i, ".ts")
				}
				ev["tool_use_id"] = fmt.Sprint("toolu_parallel_", i)
				if tc.agent == "gemini" {
					delete(ev, "tool_use_id")
				}
				body, _ := json.Marshal(ev)
				c.cmd = exec.Command(exe, "-test.run=^$")
				c.cmd.Dir, c.cmd.Env, c.cmd.Stdin = work, append(os.Environ(), childEnv+"="+string(rawArgs)), bytes.NewReader(body)
				c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
				if err := c.cmd.Start(); err != nil {
					t.Fatal(err)
				}
				children[i] = c
			}
			deadline := time.AfterFunc(60*time.Second, func() {
				for _, c := range children {
					c.cmd.Process.Kill()
				}
			})
			defer deadline.Stop()
			wrong := 0
			for i, c := range children {
				err := c.cmd.Wait()
				got := strings.TrimSpace(c.out.String())
				want := tc.allowedReply
				ok := got == want
				if c.blocked {
					want = fmt.Sprint("Bash(rm *) denies this command: rm -rf dist", i)
					ok = strings.Contains(got, want) && !strings.Contains(got, "fail closed")
				}
				if err != nil || !ok {
					wrong++
					t.Errorf("call %d of %d in parallel: %v, output %s; want %s", i, n, err, got, want)
				}
			}
			if wrong > 0 {
				t.Fatalf("%d of %d parallel events of one session were not decided as alone", wrong, n)
			}
			// Each denied call ended its run, which saved the thread once.
			threads, _ := filepath.Glob(filepath.Join(work, "state", "threads", "*.json"))
			if len(threads) != 1 {
				t.Fatalf("threads: %v", threads)
			}
			raw, _ := os.ReadFile(threads[0])
			var th struct {
				Revision int `json:"revision"`
			}
			if err := json.Unmarshal(raw, &th); err != nil || th.Revision != n/2 {
				t.Fatalf("the thread is at revision %d (%v), want %d: a run's thread save was lost", th.Revision, err, n/2)
			}
		})
	}
}

// An event whose save lost a race runs again from the store, within the
// deadline; one that loses every time is denied with a reason that says
// what to do, and a deadline ends the tries.
func TestRetryLost(t *testing.T) {
	conflict := errs.New(errs.RevisionConflict, "thread \"s\" was saved by another run")
	tries := 0
	reply, err := retryLost(context.Background(), "state", func() localTry {
		tries++
		if tries < 3 {
			return localTry{reply: []byte(`{"deny":1}`), lost: conflict}
		}
		return localTry{reply: []byte("{}")}
	})
	if err != nil || string(reply) != "{}" || tries != 3 {
		t.Fatalf("lost twice, then won: reply %s, err %v, %d tries", reply, err, tries)
	}
	tries = 0
	_, err = retryLost(context.Background(), "state", func() localTry { tries++; return localTry{lost: conflict} })
	if errs.CodeOf(err) != errs.RevisionConflict || tries != maxLocalTries || !strings.Contains(err.Error(), "run the call again") {
		t.Fatalf("lost every time: %v after %d tries", err, tries)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tries = 0
	_, err = retryLost(ctx, "state", func() localTry { tries++; cancel(); return localTry{lost: conflict} })
	if !errors.Is(err, errs.RevisionConflict) || tries != 1 {
		t.Fatalf("past the deadline: %v after %d tries", err, tries)
	}
}

// TestHookLocalSession plays the recorded Claude Code session through
// `hook --local`, each event a process of its own as the agent runs it:
// every reply must be the sidecar's, which needs the session's run to
// carry from event to event (the first Stop is kept going by the
// reference policy's runtime.continue, in the run the calls were made
// in). Once the session ends no run is left in the store, the thread
// keeps what the run wrote, and no call was recorded twice (the events
// after the first take up the run's open step as it was).
func TestHookLocalSession(t *testing.T) {
	dir, events := recordedEvents(t)
	work := localProject(t, filepath.Join(dir, "policy"))
	for _, ev := range events {
		body, err := os.ReadFile(ev)
		if err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runChild(t, work, nil, body, "hook", "--local")
		want := strings.TrimSuffix(ev, ".json") + ".reply.json"
		if code != 0 || !sameJSON(t, []byte(out), want) {
			wantRaw, _ := os.ReadFile(want)
			t.Fatalf("%s: exit %d, stdout %s (want %s), stderr %s", filepath.Base(ev), code, out, wantRaw, errOut)
		}
	}
	// A session that sends PostToolUse but no PostToolBatch: each call's
	// step is still open when the next call comes, in another process.
	for i := range 3 {
		id := fmt.Sprintf("toolu_%d", i)
		for _, ev := range []string{
			`{"session_id":"s2","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"npm test"},"tool_use_id":"` + id + `"}`,
			`{"session_id":"s2","cwd":"/tmp","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"npm test"},"tool_response":{"stdout":"ok"},"tool_use_id":"` + id + `"}`,
		} {
			if out, errOut, code := runChild(t, work, nil, []byte(ev), "hook", "--local"); code != 0 || out != "{}\n" {
				t.Fatalf("%s: exit %d, stdout %q, stderr %s", ev, code, out, errOut)
			}
		}
	}
	for _, active := range []string{"false", "true"} {
		ev := `{"session_id":"s2","cwd":"/tmp","hook_event_name":"Stop","stop_hook_active":` + active + `}`
		if out, errOut, code := runChild(t, work, nil, []byte(ev), "hook", "--local"); code != 0 || strings.Contains(out, "block") == (active == "true") {
			t.Fatalf("stop_hook_active %s: exit %d, stdout %q, stderr %s", active, code, out, errOut)
		}
	}
	store := filepath.Join(work, "state")
	if left := leftRuns(t, store); len(left) != 0 {
		t.Errorf("once the sessions are over the store keeps runs: %v", left)
	}
	threads, _ := filepath.Glob(filepath.Join(store, "threads", "*.json"))
	if len(threads) == 0 {
		t.Fatal("no thread saved")
	}
	for _, f := range threads {
		raw, _ := os.ReadFile(f)
		var th struct {
			ID       string         `json:"id"`
			Values   map[string]any `json:"values"`
			Messages []struct {
				ToolCalls []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(raw, &th); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range th.Messages {
			for _, c := range m.ToolCalls {
				if seen[c.ID] {
					t.Errorf("thread %s records call %s twice", th.ID, c.ID)
				}
				seen[c.ID] = true
			}
		}
		if strings.Contains(th.ID, "/subagent/") {
			continue
		}
		if th.Values["reference.continued"] != true {
			t.Errorf("thread %s: the run's state did not reach it: %v", th.ID, th.Values)
		}
		if len(seen) == 0 {
			t.Errorf("thread %s: no call recorded", th.ID)
		}
	}
}

// TestHookLocalCursorCalls runs a Cursor conversation's shell calls
// through `hook --local`, a process per event. Cursor's events carry no
// call id, so the adapter makes one; a process's first would be the same
// in every process, and the conversation's run, which now carries from
// event to event, would take each later call for the first one again:
// denied as "already decided with other input", or answered with the
// first one's kept decision without its gate running.
func TestHookLocalCursorCalls(t *testing.T) {
	dir, _ := recordedEvents(t)
	work := localProject(t, filepath.Join(dir, "policy"))
	ev := func(event, command string) []byte {
		return []byte(`{"conversation_id":"c1","hook_event_name":"` + event + `","command":"` + command +
			`","cwd":"/tmp","workspace_roots":["/tmp"],"output":"ok"}`)
	}
	for _, step := range []struct{ event, command, want string }{
		{"beforeShellExecution", "npm test", "{}"},
		{"afterShellExecution", "npm test", "{}"},
		{"beforeShellExecution", "ls", "{}"},
		{"afterShellExecution", "ls", "{}"},
		{"beforeShellExecution", "rm -rf dist", `"permission":"deny"`},
		{"beforeShellExecution", "npm run build", "{}"},
	} {
		out, errOut, code := runChild(t, work, nil, ev(step.event, step.command), "hook", "--local", "--agent", "cursor")
		if code != 0 || !strings.Contains(out, step.want) || (step.want == "{}" && strings.TrimSpace(out) != "{}") {
			t.Fatalf("%s %q: exit %d, stdout %s (want %s), stderr %s", step.event, step.command, code, out, step.want, errOut)
		}
		if step.command == "rm -rf dist" && !strings.Contains(out, "Bash(rm *) denies") {
			t.Fatalf("rm: %s", out)
		}
	}
}

// TestHookLocalTakesUpOnlyItsOwnRun: a sessions record that names
// another session's run (hand-edited, or left by a bug) does not make the
// session take that run up: its call goes into a run on its own thread.
func TestHookLocalTakesUpOnlyItsOwnRun(t *testing.T) {
	dir, _ := recordedEvents(t)
	work := localProject(t, filepath.Join(dir, "policy"))
	pre := func(session, id string) {
		t.Helper()
		ev := `{"session_id":"` + session + `","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"npm test"},"tool_use_id":"` + id + `"}`
		if out, errOut, code := runChild(t, work, nil, []byte(ev), "hook", "--local"); code != 0 || strings.TrimSpace(out) != "{}" {
			t.Fatalf("%s: exit %d, stdout %s, stderr %s", id, code, out, errOut)
		}
	}
	pre("a", "toolu_a1")
	store, err := filestore.Open(filepath.Join(work, "state"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec, err := store.Session(ctx, "a")
	runs := rec.Runs
	if err != nil || runs["a"] == "" {
		t.Fatalf("session a's record: %v, %v", runs, err)
	}
	if err := store.PutSession(ctx, "b", filestore.LocalSession{Runs: map[string]string{"b": runs["a"]}}); err != nil {
		t.Fatal(err)
	}
	pre("b", "toolu_b1")
	cp, ok, err := store.Run(ctx, runs["a"])
	if err != nil || !ok {
		t.Fatalf("session a's run: %v %v", ok, err)
	}
	for _, c := range cp.Calls {
		if c.Call.ID == "toolu_b1" {
			t.Fatalf("session b's call went into session a's run %s", cp.RunID)
		}
	}
	if cp.Status != run.Running {
		t.Fatalf("session a's run was ended by session b's event: %s", cp.Status)
	}
}

// localEvent is one hook event of a session played through both the
// sidecar and `hook --local`: the agent, the --event it needs (Copilot's
// input does not name it), and the body.
type localEvent struct {
	agent, event string
	body         []byte
}

// sidecarAndLocal plays events through a sidecar on a file store and,
// on a second store, through `hook --local` (a process per event): every
// --local reply must be the sidecar's, and the stores must hold the same
// threads once the session is over (run ids and the call ids Cursor's
// adapter makes aside), with no run and no sessions record left. It
// returns the --local project's store.
func sidecarAndLocal(t *testing.T, events []localEvent) string {
	t.Helper()
	dir, _ := recordedEvents(t)
	policy := filepath.Join(dir, "policy")
	return sidecarAndLocalIn(t, func() string { return localProject(t, policy) }, events)
}

// sidecarAndLocalIn is sidecarAndLocal in projects project makes; when
// they write an audit file (audit.jsonl), both must write the same
// records (run ids and times aside).
func sidecarAndLocalIn(t *testing.T, project func() string, events []localEvent) string {
	t.Helper()
	side := project()
	h, err := host.Open(context.Background(), host.Options{ConfigPath: filepath.Join(side, "awaken.toml"), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(h, server.Options{HookAgent: "default", Log: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv)
	want := make([]string, len(events))
	for i, ev := range events {
		path := hookPath(ev.agent, "", ev.event, "")
		resp, err := http.Post(ts.URL+path, "application/json", bytes.NewReader(ev.body))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want[i] = strings.TrimSpace(string(out))
	}
	ts.Close()
	srv.Close()
	h.Close()
	work := project()
	for i, ev := range events {
		args := []string{"hook", "--local", "--agent", ev.agent}
		if ev.event != "" {
			args = append(args, "--event", ev.event)
		}
		out, errOut, code := runChild(t, work, nil, ev.body, args...)
		if code != 0 || strings.TrimSpace(out) != want[i] {
			t.Fatalf("event %d %s: exit %d, stdout %s (the sidecar's: %s), stderr %s", i, ev.body, code, out, want[i], errOut)
		}
	}
	ids := regexp.MustCompile(`run_[0-9a-f]+|cursor_[A-Z2-7]+_[0-9]+`)
	threads := func(root string) map[string]string {
		files, _ := filepath.Glob(filepath.Join(root, "state", "threads", "*.json"))
		m := map[string]string{}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m[filepath.Base(f)] = ids.ReplaceAllString(string(raw), "ID")
		}
		return m
	}
	got, wantThreads := threads(work), threads(side)
	if len(wantThreads) == 0 || !reflect.DeepEqual(got, wantThreads) {
		t.Errorf("the threads --local left:\n%v\nthe sidecar's:\n%v", got, wantThreads)
	}
	audit := func(root string) []string {
		raw, err := os.ReadFile(filepath.Join(root, "audit.jsonl"))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("audit line %s: %v", line, err)
			}
			delete(rec, "time")
			delete(rec, "run_id")
			b, _ := json.Marshal(rec)
			lines = append(lines, string(b))
		}
		return lines
	}
	if gotAudit, wantAudit := audit(work), audit(side); !reflect.DeepEqual(gotAudit, wantAudit) {
		t.Errorf("the audit --local wrote:\n%s\nthe sidecar's:\n%s", strings.Join(gotAudit, "\n"), strings.Join(wantAudit, "\n"))
	}
	store := filepath.Join(work, "state")
	if left := leftRuns(t, store); len(left) != 0 {
		t.Errorf("once the session is over the store keeps runs: %v", left)
	}
	return store
}

// leftRuns lists the runs a file store keeps, in runs/ or named by a
// sessions/ record. A session that did not end (no SessionEnd) keeps its
// record for what the adapter learned of it, as a sidecar keeps the
// session in memory, but no run.
func leftRuns(t *testing.T, store string) []string {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(store, "runs", "*"))
	records, _ := filepath.Glob(filepath.Join(store, "sessions", "*"))
	for _, f := range records {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Runs map[string]string `json:"runs"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, id := range rec.Runs {
			left = append(left, f+": "+id)
		}
	}
	return left
}

// TestHookLocalAgentSessions plays the recorded session of every agent
// besides Claude Code (TestHookLocalSession) through `hook --local`, a
// process per event: each reply, and the thread the session leaves, is
// the sidecar's. Cursor's after events carry no call id and come in a
// process that never saw the call's before event: they must still find
// the call, or its result is never recorded.
func TestHookLocalAgentSessions(t *testing.T) {
	for _, agent := range []string{"codex", "copilot", "cursor", "gemini"} {
		t.Run(agent, func(t *testing.T) {
			_, files := agentEvents(t, agent)
			var events []localEvent
			for _, f := range files {
				body, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				ev := localEvent{agent: agent, body: body}
				if agent == "copilot" {
					ev.event = strings.Split(filepath.Base(f), ".")[1]
				}
				events = append(events, ev)
			}
			store := sidecarAndLocal(t, events)
			threads, _ := filepath.Glob(filepath.Join(store, "threads", "*.json"))
			for _, f := range threads {
				raw, _ := os.ReadFile(f)
				var th struct {
					Values   map[string]any `json:"values"`
					Messages []struct {
						ToolCalls []struct {
							ID string `json:"id"`
						} `json:"tool_calls"`
						ToolCallID string `json:"tool_call_id"`
					} `json:"messages"`
				}
				if err := json.Unmarshal(raw, &th); err != nil {
					t.Fatal(err)
				}
				calls, results := map[string]bool{}, map[string]bool{}
				for _, m := range th.Messages {
					for _, c := range m.ToolCalls {
						if calls[c.ID] {
							t.Errorf("%s records call %s twice", filepath.Base(f), c.ID)
						}
						calls[c.ID] = true
					}
					if m.ToolCallID != "" {
						if results[m.ToolCallID] {
							t.Errorf("%s records the result of %s twice", filepath.Base(f), m.ToolCallID)
						}
						results[m.ToolCallID] = true
					}
				}
				if th.Values["reference.continued"] != true {
					t.Errorf("%s: the run's state did not reach the thread: %v", filepath.Base(f), th.Values)
				}
			}
		})
	}
}
