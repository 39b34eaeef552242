package hooks

// Deferred calls: Claude Code's permissionDecision "defer", which only a
// headless `claude -p` honours, and only for a call made alone. With
// ?suspend=defer a call a plugin suspends is parked instead of asked about:
// the step ends and the run waits on the call's ticket like any suspended
// run (its ticket can expire; GET /v1/runs/{id} shows it). Claude Code
// exits with the call pending; the host that runs it collects a decision
// through its own interface and posts it to the run (POST
// /v1/runs/{id}/resume, the run named by GET
// /v1/hooks/claude-code/sessions/{session}), then resumes Claude Code,
// whose PreToolUse for the same call is answered from that decision.

import (
	"context"
	"fmt"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/run"
)

// MaxDeferHold is how long the sidecar keeps a session whose deferred call
// nobody decides: past it the session is forgotten like an idle one, and
// its resumed PreToolUse cancels the waiting run (a ticket_timeout shorter
// than this settles the call first).
const MaxDeferHold = 24 * time.Hour

// Suspend answers a PreToolUse can give, from ?suspend=.
const (
	suspendAsk   = "ask"
	suspendDefer = "defer"
)

// deferCall parks the suspended call the gate just answered (e locked):
// the step ends, the run waits, and Claude Code is told "defer". A call
// made beside others cannot be deferred (Claude Code would ignore it and
// fall back to its own permission rules), so it is denied instead.
func (c *claudeCode) deferCall(ctx context.Context, cs *ccSession, e Run, call string, res *ccResult) error {
	for _, rec := range e.Session().Calls() {
		if rec.Call.ID != call {
			res.decision = "deny"
			res.reason += " (awaken-lua: this call needs an approval, and Claude Code defers only a call made alone; make it on its own)"
			return nil
		}
	}
	if _, err := e.Session().StepEnd(ctx); err != nil {
		return err
	}
	if e.Session().Status() != run.Waiting {
		return fmt.Errorf("run %s did not wait on call %s", e.ID(), call)
	}
	cs.deferring = true
	res.decision = suspendDefer
	return nil
}

// deferred answers a PreToolUse while the session's run waits on a
// deferred call (e locked): the same call is deferred again until a
// decision came, and denied when the decision cancelled it. handled is
// false when the event goes the usual way: the call was resumed (it is
// gated again), or it is another call (Claude Code moved on, and the
// waiting run is cancelled as the adapter does for any run left waiting).
// An error (settling an expired ticket failed) is handled too.
func (c *claudeCode) deferred(ctx context.Context, e Run, cs *ccSession, id string, res *ccResult) (handled bool, err error) {
	// A ticket past its expiry is settled now: the janitor comes round
	// only every so often, and until then the call would be deferred again.
	if _, _, err := e.Session().Expire(ctx); err != nil {
		return true, err
	}
	rec, ok := findCall(e, id)
	if !ok {
		cs.deferring = false
		return false, nil
	}
	switch {
	case rec.Status == run.CallSuspended && e.Session().Status() == run.Waiting:
		res.decision, res.reason = suspendDefer, rec.Gate.Reason
		return true, nil
	case rec.Status == run.CallCancelled:
		cs.deferring = false
		what := "the approval was refused"
		if rec.Expired {
			what = "nobody answered the approval in time"
		}
		res.decision, res.reason = "deny", "awaken-lua: "+what
		if rec.Result != nil {
			res.reason += ": " + run.ResultText(*rec.Result)
		}
		return true, nil
	}
	cs.deferring = false
	return false, nil
}

// SessionView is GET /v1/hooks/claude-code/sessions/{session}: the run a
// Claude Code session's events drive, so the host of a headless Claude
// Code can decide the calls it deferred.
type SessionView struct {
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id,omitempty"`
	// Deferred: the run waits on calls answered "defer"; Suspended are
	// their tickets, which POST /v1/runs/{run_id}/resume decides.
	Deferred  bool          `json:"deferred"`
	Suspended []gate.Ticket `json:"suspended"`
}

// ClaudeCodeSession reports a Claude Code session; false when the sidecar
// holds no such session (it ended, idled out, was let go of past max_runs, or the sidecar restarted).
func (a *Adapters) ClaudeCodeSession(ctx context.Context, id string) (SessionView, bool, error) {
	c := a.cc
	c.mu.Lock()
	cs := c.sessions[id]
	c.mu.Unlock()
	if cs == nil {
		return SessionView{}, false, nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.gone {
		return SessionView{}, false, nil
	}
	view := SessionView{SessionID: id, Suspended: []gate.Ticket{}}
	e, err := c.openRun(ctx, cs)
	if err != nil {
		return view, true, err
	}
	if e != nil {
		view.RunID = e.ID()
		view.Deferred = cs.deferring && e.Session().Status() == run.Waiting
		if s := e.Session().Suspended(); s != nil {
			view.Suspended = s
		}
		c.unlock(cs, e)
	}
	return view, true, nil
}
