// Package hooks serves the coding agents' hook protocols (Claude Code,
// Codex CLI, Gemini CLI, Cursor, Copilot CLI) over runs a sidecar holds:
// a session is a thread, a turn is a run, and each event drives the run's
// phases. Claude Code's adapter drives the runs; the other agents' files
// map their events onto Claude Code's and its replies back. The sidecar
// gives the runs through the narrow Runs interface and shares one
// admission (hookadmit.go). See docs/design.md, "The sidecar".
package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// Run is a run the sidecar holds, locked by whoever got it from Runs.
type Run interface {
	ID() string
	Session() *run.Session
	// Done reports whether the run ended (its session only answers reads).
	Done() bool
}

// ErrNoRun is what Runs.Lock returns for a run neither in memory nor in
// the store.
var ErrNoRun = errors.New("no such run")

// Runs is what the adapters need of the sidecar that holds the runs.
type Runs interface {
	// Start starts a run of agent on threadID with msgs as its whole
	// conversation (an agent keeps its own; the run sees what the events
	// tell), locked; cwd is the agent's working directory (run.StartOptions).
	Start(ctx context.Context, agent, threadID string, msgs []model.Message, cwd string) (Run, error)
	// Lock locks a run by id (ErrNoRun when there is none).
	Lock(ctx context.Context, id string) (Run, error)
	// Settle checkpoints a run an event worked on; it stays locked.
	Settle(ctx context.Context, r Run) error
	Unlock(r Run)
	// ThreadHolder is the id of the run in progress that holds a thread (in
	// memory, or out of it until it ends), or "".
	ThreadHolder(threadID string) string
	// AgentID is the id of the agent a run started as agent runs as ("":
	// the default), or "" when there is none.
	AgentID(agent string) string
	Store() run.Store
}

// Options configure the adapters.
type Options struct {
	Runs Runs
	// BodyLimit bounds an event's size; MaxIDLen a session id's.
	BodyLimit int64
	MaxIDLen  int
	// Slots are the sidecar's concurrency slots, which events share with
	// its other requests.
	Slots chan struct{}
	// HookAgent is the awaken-lua agent events run as without ?agent=.
	HookAgent string
	// MaxSessions bounds the sessions an adapter keeps (0: no bound).
	MaxSessions int
	Log         *slog.Logger
	// CheckBody refuses a body the sidecar refuses everywhere (a key
	// given twice).
	CheckBody func(body []byte) error
	// Decided counts a fresh gate decision; Failed sees the error an event
	// failed with (the sidecar watches its store's health).
	Decided func(gate.Kind)
	Failed  func(error)
}

// Adapters serve the hook endpoints.
type Adapters struct {
	cc     *claudeCode
	cursor *cursor
}

// New makes the adapters.
func New(o Options) *Adapters {
	cc := newClaudeCode(o)
	return &Adapters{cc: cc, cursor: newCursor(cc)}
}

// ClaudeCode is POST /v1/hooks/claude-code.
func (a *Adapters) ClaudeCode(w http.ResponseWriter, r *http.Request) error { return a.cc.handle(w, r) }

// Codex is POST /v1/hooks/codex.
func (a *Adapters) Codex(w http.ResponseWriter, r *http.Request) error { return a.cc.handleCodex(w, r) }

// Gemini is POST /v1/hooks/gemini (and gemini-cli).
func (a *Adapters) Gemini(w http.ResponseWriter, r *http.Request) error {
	return a.cc.handleGemini(w, r)
}

// Copilot is POST /v1/hooks/copilot.
func (a *Adapters) Copilot(w http.ResponseWriter, r *http.Request) error {
	return a.cc.handleCopilot(w, r)
}

// Cursor is POST /v1/hooks/cursor.
func (a *Adapters) Cursor(w http.ResponseWriter, r *http.Request) error { return a.cursor.handle(w, r) }

// Sweep forgets sessions idle past idle (an agent may exit without
// telling); a session whose deferred call waits is kept up to MaxDeferHold.
func (a *Adapters) Sweep(now time.Time, idle time.Duration) { a.cc.sweep(now, idle) }

// denial is the deny an agent whose hook cannot ask gives for Claude
// Code's answer s: a deny as it is, an ask as a deny that says why; ok is
// false for any other answer.
func (s *ccSpecific) denial(agent string) (reason string, ok bool) {
	switch s.PermissionDecision {
	case "deny":
		return s.PermissionDecisionReason, true
	case "ask":
		return "a person must approve this call, and " + agent + "'s hook cannot ask, so it is denied: " + s.PermissionDecisionReason, true
	}
	return "", false
}

// writeJSON writes a reply as the sidecar writes its own.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n')) // the client went away: nothing to tell it
	return nil
}

// agentTool is how another agent's built-in tool reads as Claude Code's
// (so Bash(rm *), Read(./.env) and the like apply to it): Claude Code's
// name for it, and its arguments renamed (the agent's -> Claude Code's;
// the others keep their names).
type agentTool struct {
	name string
	args map[string]string
}

// asClaudeCode names a call of one of tools as Claude Code would, and
// returns how its arguments were renamed (Claude Code's name -> the
// agent's); a tool not in tools keeps its name and arguments. Two
// arguments that would take one name (read_file's absolute_path and
// file_path, glob's path and dir_path) are an error: keeping either one
// would let the rules judge an argument the tool may not use.
func asClaudeCode(tools map[string]agentTool, name string, args map[string]any) (string, map[string]any, map[string]string, error) {
	t, ok := tools[name]
	if !ok {
		return name, args, nil, nil
	}
	out := make(map[string]any, len(args))
	back := make(map[string]string, len(args))
	for k, v := range args {
		to := k
		if m, ok := t.args[k]; ok {
			to = m
		}
		if other, taken := back[to]; taken {
			a, b := min(k, other), max(k, other)
			return "", nil, nil, fmt.Errorf("tool_input of %s gives both %s and %s, which name one argument (%s); give one", name, a, b, to)
		}
		out[to], back[to] = v, k
	}
	return t.name, out, back, nil
}

// fromClaudeCode gives rewritten arguments back the agent's names.
func fromClaudeCode(args map[string]any, back map[string]string) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		if a, ok := back[k]; ok {
			k = a
		}
		out[k] = v
	}
	return out
}
