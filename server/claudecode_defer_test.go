package server

import (
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/server/hooks"
)

// A headless Claude Code (?suspend=defer) parks a suspended call: it exits
// with the call pending, the host decides it on the run, and the resumed
// session's PreToolUse for the same call is answered from the decision.
func TestClaudeCodeDefer(t *testing.T) {
	for _, tc := range []struct {
		name, action string
		want         string // the resumed PreToolUse's decision ("" = allowed)
		ended        string
	}{
		{"approved", "resume", "", `["toolu_01PUSH:succeeded"]`},
		{"refused", "cancel", "deny", `["toolu_01PUSH:cancelled"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := ccSidecar(t, Options{})
			ev := func(name string, extra map[string]any) map[string]any {
				m := map[string]any{"session_id": "headless"}
				for k, v := range extra {
					m[k] = v
				}
				return sc.hook(t, fixture(t, name, m), "?suspend=defer")
			}
			sc.hook(t, fixture(t, "session_start", map[string]any{"session_id": "headless"}), "?suspend=defer")
			ev("user_prompt_submit", nil)
			wantDecision(t, ev("pre_tool_use_git_push", nil), "defer", "Push to the remote?")
			// claude -p exits: its Stop and SessionEnd leave the call waiting.
			wantEmpty(t, ev("stop", nil))
			wantEmpty(t, ev("session_end", nil))

			view := sc.must(200, "GET", "/v1/hooks/claude-code/sessions/headless", nil)
			id := view.str("run_id")
			if id == "" || view.body["deferred"] != true || !strings.Contains(string(view.raw), "Push to the remote?") {
				t.Fatalf("the session view: %s", view.raw)
			}
			if st := sc.must(200, "GET", "/v1/runs/"+id, nil); st.str("status") != "waiting" {
				t.Fatalf("the run should wait on the deferred call: %s", st.raw)
			}

			// Resumed before a decision: deferred again.
			wantEmpty(t, ev("session_start", map[string]any{"source": "resume"}))
			wantDecision(t, ev("pre_tool_use_git_push", nil), "defer", "Push to the remote?")

			sc.must(200, "POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{
				map[string]any{"target": "toolu_01PUSH", "action": tc.action, "reason": "not today"}}})
			wantEmpty(t, ev("session_start", map[string]any{"source": "resume"}))
			out := ev("pre_tool_use_git_push", nil)
			if tc.want == "" {
				wantEmpty(t, out)
				ev("post_tool_use_git_push", nil)
			} else {
				wantDecision(t, out, tc.want, "not today")
			}
			wantEmpty(t, ev("stop", nil))
			st := sc.must(200, "GET", "/v1/runs/"+id, nil)
			if ended := mustJSON(st.body["state"].(map[string]any)["ccpolicy.ended"]); !strings.HasSuffix(ended, tc.ended) || st.str("status") != "done" {
				t.Fatalf("after the decision: %s", st.raw)
			}
			if sc.must(200, "GET", "/v1/hooks/claude-code/sessions/headless", nil).body["deferred"] != false {
				t.Fatal("the session still defers after its call was decided")
			}
		})
	}
}

// A suspended call in a batch cannot be deferred (Claude Code would fall
// back to its own rules): it is denied. Without ?suspend=defer a suspend
// is still "ask", and a bad ?suspend= fails closed.
func TestClaudeCodeDeferOnlyAlone(t *testing.T) {
	sc := ccSidecar(t, Options{})
	s := map[string]any{"session_id": "batch"}
	sc.hook(t, fixture(t, "user_prompt_submit", s), "?suspend=defer")
	wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_write", s), "?suspend=defer"))
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", s), "?suspend=defer"), "deny", "defers only a call made alone")

	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", map[string]any{"session_id": "asks"}), ""), "ask", "Push to the remote?")
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", map[string]any{"session_id": "bad"}), "?suspend=later"), "deny", `?suspend= is "ask" or "defer"`)
	if r := sc.call("GET", "/v1/hooks/claude-code/sessions/nobody", nil); r.status != 404 || !strings.Contains(string(r.raw), "session_not_found") {
		t.Fatalf("an unknown session: %d %s", r.status, r.raw)
	}
}

// Nobody decides a deferred call: its ticket expires, the sidecar settles
// it by itself (on_timeout cancel), and the resumed session's PreToolUse is
// denied. The session outlives the idle timeout while its call waits.
func TestClaudeCodeDeferExpires(t *testing.T) {
	lua := strings.Replace(ccPolicyLua, `awaken.suspend { message = "Push to the remote?" }`,
		`awaken.suspend { message = "Push to the remote?", timeout = "50ms" }`, 1)
	sc := newSidecar(t, project(t, "", map[string]string{"ccpolicy.lua": lua}),
		Options{Log: quietLog(), IdleTimeout: 20 * time.Millisecond})
	s := map[string]any{"session_id": "late"}
	sc.hook(t, fixture(t, "user_prompt_submit", s), "?suspend=defer")
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", s), "?suspend=defer"), "defer", "Push to the remote?")
	wantEmpty(t, sc.hook(t, fixture(t, "session_end", s), "?suspend=defer"))
	waitFor(t, func() bool { return sc.metricValue("awaken_tickets_expired_total") == 1 })
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", s), "?suspend=defer"), "deny", "nobody answered the approval in time")
}

// A session that defers is kept past the idle timeout, but not without
// bound: past MaxDeferHold the sweep forgets it like any idle session.
func TestClaudeCodeDeferHoldIsBounded(t *testing.T) {
	sc := ccSidecar(t, Options{})
	s := map[string]any{"session_id": "gone"}
	sc.hook(t, fixture(t, "user_prompt_submit", s), "?suspend=defer")
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", s), "?suspend=defer"), "defer", "Push")
	sc.srv.agents.Sweep(time.Now().Add(time.Hour), time.Minute)
	if sc.ccRunID(t, "gone") == "" {
		t.Fatal("a deferring session was swept after an hour")
	}
	sc.srv.agents.Sweep(time.Now().Add(hooks.MaxDeferHold+time.Hour), time.Minute)
	if sc.ccRunID(t, "gone") != "" {
		t.Fatal("a deferring session outlived MaxDeferHold")
	}
}

// A deferred call whose ticket has expired is not deferred again while
// the janitor has yet to come round (it runs up to a minute apart): the
// resumed session's PreToolUse settles it, denied as expired.
func TestClaudeCodeDeferExpiredBeforeTheJanitor(t *testing.T) {
	lua := strings.Replace(ccPolicyLua, `awaken.suspend { message = "Push to the remote?" }`,
		`awaken.suspend { message = "Push to the remote?", timeout = "30ms" }`, 1)
	sc := newSidecar(t, project(t, "", map[string]string{"ccpolicy.lua": lua}), Options{Log: quietLog()})
	s := map[string]any{"session_id": "due"}
	sc.hook(t, fixture(t, "user_prompt_submit", s), "?suspend=defer")
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", s), "?suspend=defer"), "defer", "Push to the remote?")
	view := sc.must(200, "GET", "/v1/hooks/claude-code/sessions/due", nil)
	tickets, _ := view.body["suspended"].([]any)
	if len(tickets) != 1 {
		t.Fatalf("the session view: %s", view.raw)
	}
	at, err := time.Parse(time.RFC3339Nano, tickets[0].(map[string]any)["expires_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return time.Now().After(at) })
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", s), "?suspend=defer"), "deny", "nobody answered the approval in time")
	if n := sc.metricValue("awaken_tickets_expired_total"); n != 1 {
		t.Fatalf("awaken_tickets_expired_total %v, want 1", n)
	}
}

// TestClaudeCodeAskHasNoExpiry: a call answered "ask" is decided in Claude
// Code's own dialog, which runs it whenever its user approves. An approval
// that comes after the plugin's ticket timeout is still the truth: the
// call is recorded with its result (after_tool_execute saw it), not as
// cancelled by an expiry nobody could enforce.
func TestClaudeCodeAskHasNoExpiry(t *testing.T) {
	lua := strings.Replace(ccPolicyLua, `awaken.suspend { message = "Push to the remote?" }`,
		`awaken.suspend { message = "Push to the remote?", timeout = "30ms" }`, 1)
	sc := newSidecar(t, project(t, "", map[string]string{"ccpolicy.lua": lua}), Options{Log: quietLog(), IdleTimeout: 20 * time.Millisecond})
	s := map[string]any{"session_id": "late"}
	sc.hook(t, fixture(t, "user_prompt_submit", s), "")
	asked := time.Now()
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", s), ""), "ask", "Push to the remote?")
	id := sc.ccRunID(t, "late")
	waitFor(t, func() bool { return time.Since(asked) > 100*time.Millisecond })
	sc.hook(t, fixture(t, "post_tool_use_git_push", s), "")
	got := sc.must(200, "GET", "/v1/runs/"+id, nil)
	st := got.body["state"].(map[string]any)
	if !strings.Contains(mustJSON(st), `"Bash:success"`) || strings.Contains(mustJSON(st["__runtime.tool_calls"]), `"expired":true`) {
		t.Fatalf("the push the user approved late ran, and is recorded so: %s", got.raw)
	}
	if n := sc.metricValue("awaken_tickets_expired_total"); n != 0 {
		t.Fatalf("awaken_tickets_expired_total %v, want 0", n)
	}
}
