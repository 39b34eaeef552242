package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// The Claude Code adapter (POST /v1/hooks/claude-code) turns the hook
// events Claude Code sends into phases of runs, so the same Lua plugins
// that gate an agent over the sidecar API gate Claude Code's tools.
//
// The mapping (README.md explains it for users):
//
//   - session_id is the thread; a run lasts from UserPromptSubmit to Stop
//     (a run ends when the model answers without tool calls, which is what
//     Stop means), and thread-scoped state carries across prompts.
//   - A step is one inference: UserPromptSubmit opens the first (step_start,
//     before_inference with the prompt); PreToolUse feeds the call to
//     after_inference as the model's answer and gates it; PostToolUse runs
//     after_tool_execute and, once the step's calls are done, ends the step
//     and opens the next, whose context messages go back as
//     additionalContext. Calls Claude Code runs in parallel join one step.
//   - Claude Code announces tools only in its hooks, so before_inference
//     offers its built-in tools plus every tool seen in the session. The
//     first call of another tool (an MCP tool) in a step that did not offer
//     it fails there with "not available" and is gated again in a fresh step
//     that offers it; a tool a plugin filtered out is denied.
//   - Decisions: block -> deny; suspend -> ask; set_result -> deny with the
//     result as the reason (Claude Code cannot substitute a tool's result,
//     and the reason is what Claude reads); rewrite -> allow with
//     updatedInput; allow -> no decision, so Claude Code's own permission
//     rules still apply and adding the sidecar never widens what may run.
//   - A call answered "ask" stays suspended: its PostToolUse means the user
//     approved it (the run waits, resumes it, gates it again and records the
//     result); no PostToolUse before the step closes means they did not
//     (the call is cancelled).
//   - A plugin's ctx:stop ends the run and answers {"continue": false}; the
//     step limit only starts a new run, so a long Claude Code turn goes on.
//   - Every event is answered 200 with the documented JSON. A failure
//     denies PreToolUse (fail closed) and answers {} otherwise.

// Claude Code's hook input (the fields the adapter reads; others are
// ignored).
type ccInput struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	HookEventName  string `json:"hook_event_name"`
	ToolName       string `json:"tool_name"`
	ToolInput      any    `json:"tool_input"`
	ToolUseID      string `json:"tool_use_id"`
	ToolResponse   any    `json:"tool_response"`
	Error          any    `json:"error"` // PostToolUseFailure
	Prompt         string `json:"prompt"`
	Source         string `json:"source"`
	Reason         string `json:"reason"`
	StopHookActive bool   `json:"stop_hook_active"`
	// SubagentStop
	AgentID              string `json:"agent_id"`
	LastAssistantMessage string `json:"last_assistant_message"`
}

// ccOutput is Claude Code's hook output.
type ccOutput struct {
	Continue           *bool       `json:"continue,omitempty"`
	StopReason         string      `json:"stopReason,omitempty"`
	SuppressOutput     bool        `json:"suppressOutput,omitempty"`
	SystemMessage      string      `json:"systemMessage,omitempty"`
	Decision           string      `json:"decision,omitempty"`
	Reason             string      `json:"reason,omitempty"`
	HookSpecificOutput *ccSpecific `json:"hookSpecificOutput,omitempty"`
}

type ccSpecific struct {
	HookEventName            string         `json:"hookEventName"`
	PermissionDecision       string         `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string         `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             map[string]any `json:"updatedInput,omitempty"`
	AdditionalContext        string         `json:"additionalContext,omitempty"`
	Decision                 *ccPermission  `json:"decision,omitempty"` // PermissionRequest
	UpdatedMCPToolOutput     any            `json:"updatedMCPToolOutput,omitempty"`
	hasMCP                   bool
}

// ccPermission is PermissionRequest's answer to the question Claude Code
// is about to ask its user.
type ccPermission struct {
	Behavior     string         `json:"behavior"` // allow or deny
	Message      string         `json:"message,omitempty"`
	UpdatedInput map[string]any `json:"updatedInput,omitempty"`
}

// preOnlyBatch bounds the calls of one step while the session sends no
// PostToolUse: more than Claude Code runs in parallel, few enough that an
// event's cost does not grow with the session.
const preOnlyBatch = 32

// Hook event names.
const (
	evPreToolUse         = "PreToolUse"
	evPostToolUse        = "PostToolUse"
	evPostToolUseFailure = "PostToolUseFailure"
	evUserPromptSubmit   = "UserPromptSubmit"
	evStop               = "Stop"
	evPermissionRequest  = "PermissionRequest"
	evPostToolBatch      = "PostToolBatch"
	evSubagentStop       = "SubagentStop"
	evSessionStart       = "SessionStart"
	evSessionEnd         = "SessionEnd"
)

// Stages of a run as its checkpoint names them.
const (
	stRunStarted  = "run_started"
	stStepStarted = "step_started"
	stReady       = "inference_ready"
	stInferred    = "inferred"
	stStepEnded   = "step_ended"
)

// ccBuiltinTools are offered in every step, so calls Claude Code runs in
// parallel can join one step whichever built-in tool they use.
var ccBuiltinTools = []string{"AskUserQuestion", "Bash", "BashOutput", "Edit", "ExitPlanMode", "Glob", "Grep",
	"KillBash", "KillShell", "LS", "MultiEdit", "NotebookEdit", "NotebookRead", "Read", "SlashCommand", "Skill",
	"Task", "TodoWrite", "WebFetch", "WebSearch", "Write"}

type claudeCode struct {
	s        *Server
	mu       sync.Mutex
	sessions map[string]*ccSession
}

// ccSession is what the adapter keeps per Claude Code session, in memory
// (after a restart a session starts a new run on its thread).
type ccSession struct {
	mu       sync.Mutex
	id       string
	agent    string
	runID    string          // the open run; "" when none
	seen     map[string]bool // tools seen in the session
	listed   map[string]bool // tools the adapter offered in the open step
	approved map[string]model.ToolResult
	// posts: the session sends PostToolUse (or PostToolBatch). Without
	// them (only PreToolUse installed) no call is ever seen to finish, so a
	// step holds at most preOnlyBatch calls instead of growing forever.
	posts bool
	// subRuns: a subagent's run (by agent_id) that a runtime.continue
	// kept open at its SubagentStop.
	subRuns map[string]string
	// continued: the messages runtime.continue added when the open run's
	// last step ended.
	continued []model.Message
	lastUsed  atomic.Int64
	gone      bool
}

func newClaudeCode(s *Server) *claudeCode {
	return &claudeCode{s: s, sessions: map[string]*ccSession{}}
}

// session returns the session, locked.
func (c *claudeCode) session(id, agent string) *ccSession {
	for {
		c.mu.Lock()
		cs := c.sessions[id]
		if cs == nil {
			cs = &ccSession{id: id, agent: agent, seen: map[string]bool{}, listed: map[string]bool{}, approved: map[string]model.ToolResult{}}
			c.sessions[id] = cs
		}
		c.mu.Unlock()
		cs.mu.Lock()
		if !cs.gone {
			if agent != "" {
				cs.agent = agent
			}
			return cs
		}
		cs.mu.Unlock()
	}
}

func (c *claudeCode) forget(cs *ccSession) {
	c.mu.Lock()
	if c.sessions[cs.id] == cs {
		delete(c.sessions, cs.id)
	}
	c.mu.Unlock()
	cs.gone = true
}

// sweep forgets sessions idle past the run idle timeout (Claude Code may
// exit without SessionEnd).
func (c *claudeCode) sweep(now time.Time, idle time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, cs := range c.sessions {
		if now.Sub(time.Unix(0, cs.lastUsed.Load())) <= idle || !cs.mu.TryLock() {
			continue
		}
		delete(c.sessions, id)
		cs.gone = true
		cs.mu.Unlock()
	}
}

var preToolUsePrefix = regexp.MustCompile(`"hook_event_name"\s*:\s*"PreToolUse"`)

// handle answers every event 200 with Claude Code's JSON; only a missing or
// wrong token (checked before) is an HTTP error.
func (c *claudeCode) handle(w http.ResponseWriter, r *http.Request) (err error) {
	limit := c.s.bodyLimit
	body, rerr := io.ReadAll(io.LimitReader(r.Body, limit+1))
	var in ccInput
	out := ccOutput{}
	defer func() {
		if v := recover(); v != nil {
			c.s.log.LogAttrs(r.Context(), slog.LevelError, "panic in the Claude Code adapter", slog.String("panic", fmt.Sprint(v)),
				slog.String("stack", string(debug.Stack())))
			out = c.failure(in.HookEventName, errors.New("internal error in the sidecar"))
			err = writeJSON(w, http.StatusOK, out)
		}
	}()
	switch {
	case rerr != nil:
		out = c.failure(guessEvent(body), fmt.Errorf("reading the hook input failed: %v", rerr))
	case int64(len(body)) > limit:
		out = c.failure(guessEvent(body), fmt.Errorf("the hook input is larger than the sidecar's body limit (%d bytes); raise [server] body_limit", limit))
	default:
		if jerr := json.Unmarshal(body, &in); jerr != nil {
			out = c.failure(guessEvent(body), fmt.Errorf("the hook input is not valid JSON: %v", jerr))
			break
		}
		if derr := duplicateKey(body); derr != nil {
			ev := in.HookEventName
			if guessEvent(body) == evPreToolUse {
				ev = evPreToolUse // fail closed, whichever name came last
			}
			out = c.failure(ev, derr)
			break
		}
		select {
		case c.s.sem <- struct{}{}:
			agent := r.URL.Query().Get("agent")
			if agent == "" {
				agent = c.s.hookAgent
			}
			out = c.dispatch(context.WithoutCancel(r.Context()), in, agent)
			<-c.s.sem
		default:
			out = c.failure(in.HookEventName, fmt.Errorf("the sidecar is overloaded (%d requests in flight); raise [server] max_concurrent", cap(c.s.sem)))
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// guessEvent recognises PreToolUse in a body that could not be decoded, so
// even then the call is denied rather than let through.
func guessEvent(body []byte) string {
	if preToolUsePrefix.Match(body) {
		return evPreToolUse
	}
	return ""
}

// failure is the reply when the adapter could not do its work: PreToolUse
// fails closed (deny, with the error as the reason Claude reads); other
// events carry on with {}.
func (c *claudeCode) failure(eventName string, err error) ccOutput {
	c.s.noteStore(err)
	c.s.log.LogAttrs(context.Background(), slog.LevelError, "Claude Code hook failed", slog.String("event", eventName),
		slog.String("error", err.Error()))
	if eventName == evPreToolUse {
		return ccOutput{HookSpecificOutput: &ccSpecific{HookEventName: evPreToolUse, PermissionDecision: "deny",
			PermissionDecisionReason: "awaken-lua could not evaluate this call, so it is denied (fail closed): " + err.Error()}}
	}
	return ccOutput{}
}

// ccResult is what an event produced, before it is shaped for its event.
type ccResult struct {
	// mcpOutput replaces an MCP tool's output (PostToolUse), when set.
	mcpOutput        any
	hasMCPOutput     bool
	decision, reason string
	updated          map[string]any
	context          []string
	stop             string
}

func (c *claudeCode) dispatch(ctx context.Context, in ccInput, agent string) ccOutput {
	switch in.HookEventName {
	case evPreToolUse, evPostToolUse, evPostToolUseFailure, evUserPromptSubmit, evStop, evSessionStart, evSessionEnd,
		evPermissionRequest, evPostToolBatch, evSubagentStop:
	default:
		return ccOutput{} // an event the adapter does not map (Notification, PreCompact, ...)
	}
	if in.SessionID == "" || len(in.SessionID) > maxIDLen || !utf8.ValidString(in.SessionID) {
		return c.failure(in.HookEventName, fmt.Errorf("session_id must be a non-empty UTF-8 string of at most %d bytes", maxIDLen))
	}
	cs := c.session(in.SessionID, agent)
	defer func() {
		cs.lastUsed.Store(time.Now().UnixNano())
		cs.mu.Unlock()
	}()
	res, err := c.event(ctx, cs, in)
	if err != nil {
		return c.failure(in.HookEventName, err)
	}
	return shape(in.HookEventName, res)
}

// shape puts a result into the fields Claude Code reads for the event.
func shape(eventName string, res ccResult) ccOutput {
	out := ccOutput{}
	if res.stop != "" {
		f := false
		out.Continue, out.StopReason = &f, res.stop
	}
	spec := &ccSpecific{HookEventName: eventName}
	switch eventName {
	case evPreToolUse:
		spec.PermissionDecision, spec.PermissionDecisionReason, spec.UpdatedInput = res.decision, res.reason, res.updated
		spec.AdditionalContext = strings.Join(res.context, "\n\n")
	case evPostToolUse, evPostToolUseFailure, evUserPromptSubmit, evSessionStart:
		spec.AdditionalContext = strings.Join(res.context, "\n\n")
		if res.hasMCPOutput {
			spec.UpdatedMCPToolOutput, spec.hasMCP = res.mcpOutput, true
		}
	case evStop, evSubagentStop:
		out.Decision, out.Reason = res.decision, res.reason
	case evPermissionRequest:
		if res.decision != "" {
			spec.Decision = &ccPermission{Behavior: res.decision, Message: res.reason, UpdatedInput: res.updated}
		}
	}
	if spec.PermissionDecision != "" || spec.AdditionalContext != "" || spec.UpdatedInput != nil || spec.Decision != nil || spec.hasMCP {
		out.HookSpecificOutput = spec
	}
	return out
}

func (c *claudeCode) event(ctx context.Context, cs *ccSession, in ccInput) (ccResult, error) {
	var res ccResult
	switch in.HookEventName {
	case evSessionStart:
		// A one-step run lets plugins greet the session: context messages
		// placed in its before_inference become additionalContext.
		if err := c.endOpenRun(ctx, cs); err != nil {
			return res, err
		}
		e, err := c.newRun(ctx, cs, nil)
		if err != nil {
			return res, err
		}
		e, err = c.drive(ctx, cs, e, &res, stReady, "")
		if err == nil && e != nil && e.sess.Termination() == "" {
			// No model answers a session start: the run ends without
			// telling after_inference hooks that one did.
			_, err = e.sess.EndUninferred(ctx)
		}
		if err == nil && e != nil {
			err = c.finishRun(ctx, cs, e, &res, false)
			e = nil
		}
		return res, c.release(ctx, e, err)
	case evUserPromptSubmit:
		if err := c.endOpenRun(ctx, cs); err != nil {
			return res, err
		}
		e, err := c.newRun(ctx, cs, []model.Message{{Role: model.RoleUser, Content: in.Prompt}})
		if err != nil {
			return res, err
		}
		e, err = c.drive(ctx, cs, e, &res, stReady, "")
		return res, c.release(ctx, e, err)
	case evPreToolUse:
		return c.preToolUse(ctx, cs, in)
	case evPermissionRequest:
		return c.permissionRequest(ctx, cs, in)
	case evSubagentStop:
		return c.subagentStop(ctx, cs, in)
	case evPostToolBatch:
		cs.posts = true
		// Claude Code ran the batch: the step ends here, and calls whose
		// PostToolUse never came are finished with an error result. The
		// next inference opens with the next event.
		e, err := c.openRun(ctx, cs)
		if err != nil || e == nil {
			return res, err
		}
		if stageOf(e) == stInferred {
			_, err = c.closeStep(ctx, cs, e, true)
		}
		return res, c.release(ctx, e, err)
	case evPostToolUse, evPostToolUseFailure:
		cs.posts = true
		return c.postToolUse(ctx, cs, in)
	case evStop:
		e, err := c.openRun(ctx, cs)
		if err != nil || e == nil {
			return res, err
		}
		return res, c.finishRun(ctx, cs, e, &res, true)
	case evSessionEnd:
		err := c.endOpenRun(ctx, cs)
		c.forget(cs)
		return res, err
	}
	return res, nil
}

// release settles (checkpoints) and unlocks the run an event worked on.
func (c *claudeCode) release(ctx context.Context, e *entry, err error) error {
	if e == nil {
		return err
	}
	if serr := c.s.settle(ctx, e, true); err == nil {
		err = serr
	}
	c.s.unlock(e)
	return err
}

// openRun returns the session's open run, locked, or nil.
func (c *claudeCode) openRun(ctx context.Context, cs *ccSession) (*entry, error) {
	if cs.runID == "" {
		return nil, nil
	}
	e, err := c.s.lockRun(ctx, cs.runID)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.status == http.StatusNotFound {
			cs.runID = ""
			return nil, nil
		}
		return nil, err
	}
	if e.done.Load() {
		c.s.unlock(e)
		cs.runID = ""
		return nil, nil
	}
	return e, nil
}

// newRun starts a run on the session's thread, after ending whatever run
// still holds the thread (a run the adapter lost track of, or one left
// waiting by a crash).
func (c *claudeCode) newRun(ctx context.Context, cs *ccSession, msgs []model.Message) (*entry, error) {
	if err := c.clearThread(ctx, cs); err != nil {
		return nil, err
	}
	e, err := c.s.start(ctx, createRequest{Agent: cs.agent, ThreadID: cs.id, Messages: msgs, bare: true})
	if err != nil {
		return nil, err
	}
	cs.runID = e.id
	clear(cs.listed)
	clear(cs.approved)
	return e, nil
}

func (c *claudeCode) clearThread(ctx context.Context, cs *ccSession) error {
	c.s.mu.Lock()
	holder := c.s.threads[cs.id]
	c.s.mu.Unlock()
	if holder != "" {
		if e, err := c.s.lockRun(ctx, holder); err == nil {
			if err := c.finishRun(ctx, cs, e, &ccResult{}, false); err != nil {
				return err
			}
		}
	}
	th, ok, err := c.s.h.Store().Thread(ctx, cs.id)
	if err != nil || !ok || th.Waiting == "" {
		return err
	}
	e, err := c.s.lockRun(ctx, th.Waiting)
	if err != nil {
		return nil // the waiting run is gone; Start reports a thread that still waits
	}
	return c.finishRun(ctx, cs, e, &ccResult{}, false)
}

// endOpenRun ends the session's open run as if the model had answered
// without tool calls (Stop, SessionEnd, or a new prompt after an
// interrupted turn).
func (c *claudeCode) endOpenRun(ctx context.Context, cs *ccSession) error {
	e, err := c.openRun(ctx, cs)
	if err != nil || e == nil {
		return err
	}
	return c.finishRun(ctx, cs, e, &ccResult{}, false)
}

// finishRun drives e (locked) to its end and run_end, and unlocks it.
// On Stop (stop), a runtime.continue keeps the run open instead: Claude
// Code is told to go on (decision block) with the messages as the reason,
// and the next events are the run's next step. Elsewhere a continue cannot
// be expressed and the run is driven on to its end, which max_steps and
// max_continues bound.
func (c *claudeCode) finishRun(ctx context.Context, cs *ccSession, e *entry, res *ccResult, stop bool) (err error) {
	defer func() { err = c.release(ctx, e, err) }()
	if cs.runID == e.id {
		cs.runID = ""
	}
	sess := e.sess
	cs.continued = nil
	for i := 0; i < 1024; i++ {
		if stop && len(cs.continued) > 0 && sess.Termination() == "" {
			parts := make([]string, len(cs.continued))
			for j, m := range cs.continued {
				parts[j] = m.Content
			}
			res.decision, res.reason = "block", strings.Join(parts, "\n\n")
			cs.continued = nil
			cs.runID = e.id
			return nil
		}
		if sess.Status() == run.Done {
			return nil
		}
		if sess.Status() == run.Waiting {
			_, err = sess.Cancel(ctx, "Claude Code ended the turn")
			return err
		}
		if sess.Termination() != "" {
			_, err = sess.RunEnd(ctx)
			return err
		}
		switch stageOf(e) {
		case stRunStarted, stStepEnded:
			_, err = sess.StepStart(ctx)
		case stStepStarted:
			err = c.beforeInference(ctx, cs, e, res, "")
		case stReady:
			_, err = sess.AfterInference(ctx, model.Response{})
		case stInferred:
			_, err = c.closeStep(ctx, cs, e, true)
		default:
			return fmt.Errorf("run %s is at an unknown stage %q", e.id, stageOf(e))
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("run %s did not end", e.id)
}

func stageOf(e *entry) string { return e.sess.Stage() }

// beforeInference runs before_inference offering Claude Code's tools, and
// collects the context messages plugins placed.
func (c *claudeCode) beforeInference(ctx context.Context, cs *ccSession, e *entry, res *ccResult, extra string) error {
	names := map[string]bool{}
	for _, n := range ccBuiltinTools {
		names[n] = true
	}
	for n := range cs.seen {
		names[n] = true
	}
	if extra != "" {
		names[extra] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	specs := make([]model.ToolSpec, len(sorted))
	for i, n := range sorted {
		specs[i] = model.ToolSpec{Name: n}
	}
	e.sink.capture, e.sink.placed = true, nil
	_, _, err := e.sess.BeforeInference(ctx, model.Request{Tools: specs})
	e.sink.capture = false
	clear(cs.listed)
	for n := range names {
		cs.listed[n] = true
	}
	for _, m := range e.sink.placed {
		if m.Content != "" {
			res.context = append(res.context, m.Content)
		}
	}
	e.sink.placed = nil
	return err
}

// drive advances e to stage want (stReady: an inference is open; stInferred:
// the call is in the open step), starting new steps and, when a run ends on
// the step limit, new runs. It returns the (possibly new) run, locked.
func (c *claudeCode) drive(ctx context.Context, cs *ccSession, e *entry, res *ccResult, want string, call string) (*entry, error) {
	for i := 0; i < 16; i++ {
		sess := e.sess
		if sess.Status() == run.Waiting {
			// Left waiting by an interrupted event: the adapter never
			// leaves a run waiting, so nobody answers its tickets.
			if _, err := sess.Cancel(ctx, "Claude Code moved on"); err != nil {
				return e, err
			}
		}
		if t := sess.Termination(); t != "" || sess.Status() == run.Done {
			if stop := pluginStop(e); stop != "" {
				res.stop = stop
				err := c.finishRun(ctx, cs, e, res, false)
				return nil, err
			}
			// Ended by the step limit, a block or a failure: carry on in a
			// new run on the same thread.
			if err := c.finishRun(ctx, cs, e, res, false); err != nil {
				return nil, err
			}
			ne, err := c.newRun(ctx, cs, nil)
			if err != nil {
				return nil, err
			}
			e = ne
			continue
		}
		var err error
		switch st := stageOf(e); {
		case st == want:
			return e, nil
		case st == stRunStarted || st == stStepEnded:
			_, err = sess.StepStart(ctx)
		case st == stStepStarted:
			err = c.beforeInference(ctx, cs, e, res, call)
		case st == stReady && want == stInferred:
			return e, nil // the caller answers the inference with its call
		case st == stInferred && want == stReady:
			_, err = c.closeStep(ctx, cs, e, true)
		default:
			return e, fmt.Errorf("run %s is at stage %q, not %q", e.id, st, want)
		}
		if err != nil {
			return e, err
		}
	}
	return e, fmt.Errorf("run %s did not reach %s", e.id, want)
}

// pluginStop is the stop reason when a plugin stopped the run (not the
// step limit), else "".
func pluginStop(e *entry) string {
	t := e.sess.Termination()
	if !strings.HasPrefix(t, "stopped:") || t == "stopped:max_steps" {
		return ""
	}
	reason := "awaken-lua: a plugin stopped the run (" + t + ")"
	if v, err := e.sess.Snapshot().Lookup(engine.KeyStop); err == nil {
		if m, _ := v.(map[string]any); m != nil {
			if d, _ := m["detail"].(string); d != "" {
				reason += ": " + d
			}
		}
	}
	return reason
}

// toolCall builds the call of a PreToolUse or PostToolUse. Claude Code
// versions without tool_use_id get an id from the tool and its input, the
// same in both events.
func toolCall(in ccInput) (model.ToolCall, error) {
	if in.ToolName == "" {
		return model.ToolCall{}, errors.New("the hook input has no tool_name")
	}
	args := map[string]any{}
	switch v := in.ToolInput.(type) {
	case nil:
	case map[string]any:
		args = v
	default:
		args["input"] = v
	}
	n, err := value.Normalize(args)
	if err != nil {
		return model.ToolCall{}, fmt.Errorf("tool_input: %v", err)
	}
	args = n.(map[string]any)
	id := in.ToolUseID
	if id == "" {
		b, _ := json.Marshal(args)
		sum := sha256.Sum256(append([]byte(in.ToolName+"\x00"), b...))
		id = "cc_" + hex.EncodeToString(sum[:8])
	}
	return model.ToolCall{ID: id, Name: in.ToolName, Args: args}, nil
}

func findCall(e *entry, id string) (run.CallRecord, bool) { return e.sess.Call(id) }

// subagentStop is a subagent's last answer: a run of its own (on the
// thread "<session>/subagent/<agent_id>") whose inference answered
// last_assistant_message without tool calls, so plugins may keep the
// subagent going with runtime.continue ({"decision": "block"}). The run
// stays open while they do, so max_continues bounds them; otherwise it
// ends.
func (c *claudeCode) subagentStop(ctx context.Context, cs *ccSession, in ccInput) (ccResult, error) {
	var res ccResult
	if in.AgentID == "" || len(in.AgentID) > maxIDLen {
		return res, fmt.Errorf("SubagentStop needs an agent_id of at most %d bytes", maxIDLen)
	}
	if cs.subRuns == nil {
		cs.subRuns = map[string]string{}
	}
	var e *entry
	if id := cs.subRuns[in.AgentID]; id != "" {
		if le, err := c.s.lockRun(ctx, id); err == nil {
			if le.done.Load() || le.sess.Status() != run.Running || le.sess.Stage() != stStepEnded {
				c.s.unlock(le)
			} else {
				e = le
			}
		}
		delete(cs.subRuns, in.AgentID)
	}
	if e == nil {
		var err error
		e, err = c.s.start(ctx, createRequest{Agent: cs.agent, ThreadID: cs.id + "/subagent/" + in.AgentID, bare: true})
		if err != nil {
			return res, err
		}
	}
	sess := e.sess
	var o run.Outcome
	err := func() error {
		if _, err := sess.StepStart(ctx); err != nil || sess.Termination() != "" {
			return err
		}
		if _, _, err := sess.BeforeInference(ctx, model.Request{}); err != nil || sess.Termination() != "" {
			return err
		}
		if _, err := sess.AfterInference(ctx, model.Response{Text: in.LastAssistantMessage}); err != nil || sess.Termination() != "" {
			return err
		}
		var err error
		o, err = sess.StepEnd(ctx)
		return err
	}()
	if err == nil && sess.Termination() == "" && len(o.Continued) > 0 {
		parts := make([]string, len(o.Continued))
		for i, m := range o.Continued {
			parts[i] = m.Content
		}
		res.decision, res.reason = "block", strings.Join(parts, "\n\n")
		cs.subRuns[in.AgentID] = e.id
		return res, c.release(ctx, e, nil)
	}
	if err == nil && sess.Status() == run.Running && sess.Termination() != "" {
		_, err = sess.RunEnd(ctx)
	}
	return res, c.release(ctx, e, err)
}

// permissionRequest answers Claude Code before it asks its user whether a
// call may run. The call was gated at its PreToolUse when that hook is
// installed: that decision answers (block and set_result deny, a rewrite
// allows with its input); otherwise the call is gated now. Suspend and
// allow leave the question to the user ({}), so a plugin never widens
// what the user is asked about.
func (c *claudeCode) permissionRequest(ctx context.Context, cs *ccSession, in ccInput) (ccResult, error) {
	var res ccResult
	call, err := toolCall(in)
	if err != nil {
		return res, err
	}
	e, err := c.openRun(ctx, cs)
	if err != nil {
		return res, err
	}
	if e != nil {
		calls := e.sess.Calls()
		for i := len(calls) - 1; i >= 0; i-- {
			rec := calls[i]
			if rec.Call.Name != call.Name || rec.Gate == nil || !reflect.DeepEqual(rec.Call.Args, call.Args) {
				continue
			}
			switch rec.Gate.Decision {
			case "block", "set_result":
				res.decision, res.reason = "deny", rec.Gate.Reason
				if rec.Gate.Decision == "set_result" && rec.Gate.Result != nil {
					res.reason = "awaken-lua answered this call without running it (" + rec.Gate.Plugin + "): " + run.ResultText(*rec.Gate.Result)
				}
			case "allow":
				if rec.Gate.RewrittenBy != "" {
					res.decision, res.updated = "allow", rec.Gate.Args
				}
			}
			c.s.unlock(e)
			return res, nil
		}
		c.s.unlock(e)
	}
	pre, err := c.preToolUse(ctx, cs, in)
	switch {
	case pre.decision == "deny":
		res.decision, res.reason = "deny", pre.reason
	case pre.decision == "allow" && pre.updated != nil:
		res.decision, res.updated = "allow", pre.updated
	}
	res.stop = pre.stop
	return res, err
}

func (c *claudeCode) preToolUse(ctx context.Context, cs *ccSession, in ccInput) (ccResult, error) {
	var res ccResult
	call, err := toolCall(in)
	if err != nil {
		return res, err
	}
	cs.seen[call.Name] = true
	e, err := c.openRun(ctx, cs)
	if err != nil {
		return res, err
	}
	if e == nil {
		if e, err = c.newRun(ctx, cs, nil); err != nil {
			return res, err
		}
	}
	e, err = c.toGate(ctx, cs, e, &res, call)
	if e == nil || err != nil {
		if err == nil && res.stop != "" {
			res.decision, res.reason = "deny", res.stop
		}
		return res, c.release(ctx, e, err)
	}
	sess := e.sess
	rev0 := sess.Revision()
	d, o, err := sess.ToolGate(ctx, call)
	if err != nil {
		return res, c.release(ctx, e, err)
	}
	if o.Revision != rev0 {
		c.s.metrics.decisions.inc(d.Decision)
	}
	if d.Decision != "suspend" {
		delete(cs.approved, call.ID)
	}
	switch d.Decision {
	case "allow":
		if rec, ok := findCall(e, call.ID); ok && !rec.Started && rec.Status == run.CallRunning {
			if _, err := sess.BeforeToolExecute(ctx, call); err != nil {
				return res, c.release(ctx, e, err)
			}
		}
		if d.Plugin != "" { // allowed after a rewrite
			res.decision, res.updated = "allow", d.Args
			res.reason = "awaken-lua: " + d.Plugin + " rewrote the input"
		}
	case "block":
		res.decision, res.reason = "deny", d.Reason
		if rec, ok := findCall(e, call.ID); ok && rec.Status == run.CallRunning {
			if _, _, err := sess.AfterToolExecute(ctx, call, model.ToolResult{}); err != nil {
				return res, c.release(ctx, e, err)
			}
		}
	case "set_result":
		var result model.ToolResult
		if rec, ok := findCall(e, call.ID); ok && rec.Status == run.CallRunning {
			if result, _, err = sess.AfterToolExecute(ctx, call, model.ToolResult{}); err != nil {
				return res, c.release(ctx, e, err)
			}
		} else if rec.Result != nil {
			result = *rec.Result
		} else if d.Result != nil {
			result = *d.Result
		}
		who := d.Plugin
		if who == "" {
			who = "a plugin"
		}
		res.decision = "deny"
		res.reason = "awaken-lua answered this call without running it (" + who + "): " + run.ResultText(result)
	case "suspend":
		res.decision = "ask"
		res.reason = d.Reason
		if res.reason == "" {
			res.reason = "awaken-lua: " + d.Plugin + " asks for approval of this call"
		}
	}
	if stop := pluginStop(e); stop != "" {
		res.stop = stop
		if res.decision == "" || res.decision == "allow" {
			res.decision, res.reason, res.updated = "deny", stop, nil
		}
	}
	if e.sess.Termination() != "" {
		// Blocked or stopped: end the run now; the next event starts another.
		return res, c.finishRun(ctx, cs, e, &res, false)
	}
	return res, c.release(ctx, e, nil)
}

// toGate brings the run to a step where the call can be gated: it answers
// an open inference with the call, joins a step whose other calls are still
// running (parallel tools), or closes the step and opens another.
func (c *claudeCode) toGate(ctx context.Context, cs *ccSession, e *entry, res *ccResult, call model.ToolCall) (*entry, error) {
	for i := 0; i < 8; i++ {
		ne, err := c.drive(ctx, cs, e, res, stInferred, call.Name)
		if ne == nil || err != nil {
			return ne, err
		}
		e = ne
		sess := e.sess
		if stageOf(e) == stReady {
			if _, err := sess.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{call}}); err != nil {
				return e, err
			}
			if cs.listed[call.Name] {
				return e, nil
			}
			// This inference did not offer the tool: the call fails here
			// with "not available" and is gated again in a fresh step,
			// which offers it.
			if err := c.settleUnoffered(ctx, e, call); err != nil {
				return e, err
			}
			if _, err := c.closeStep(ctx, cs, e, true); err != nil {
				return e, err
			}
			continue
		}
		// An open step (stage inferred).
		if _, ok := findCall(e, call.ID); ok {
			return e, nil // a retry: the gate answers with its kept decision
		}
		if c.stepBusy(e) && cs.listed[call.Name] && (cs.posts || len(e.sess.Calls()) < preOnlyBatch) {
			// A parallel call joins the step.
			if _, err := sess.AnnounceCall(ctx, call); err != nil {
				return e, err
			}
			return e, nil
		}
		if _, err := c.closeStep(ctx, cs, e, true); err != nil {
			return e, err
		}
	}
	return e, fmt.Errorf("could not open a step for call %s", call.ID)
}

// settleUnoffered finishes a call to a tool the step did not offer.
func (c *claudeCode) settleUnoffered(ctx context.Context, e *entry, call model.ToolCall) error {
	sess := e.sess
	d, _, err := sess.ToolGate(ctx, call)
	if err != nil {
		return err
	}
	if d.Decision == "block" || d.Decision == "set_result" {
		_, _, err = sess.AfterToolExecute(ctx, call, model.ToolResult{})
	}
	return err
}

// stepBusy reports whether a call of the open step still waits for its
// PostToolUse.
func (c *claudeCode) stepBusy(e *entry) bool {
	for _, rec := range e.sess.Calls() {
		if rec.Status == run.CallRunning || rec.Status == run.CallNew || rec.Status == run.CallResuming {
			return true
		}
	}
	return false
}

// closeStep ends the open step. Calls still running get an error result
// when final (their PostToolUse never came: Claude Code's user denied them
// or they failed); otherwise the step stays open for them. Suspended calls
// are resumed when Claude Code ran them (PostToolUse after "ask") and
// cancelled when final; then step_end runs.
func (c *claudeCode) closeStep(ctx context.Context, cs *ccSession, e *entry, final bool) (bool, error) {
	sess := e.sess
	var suspended []run.CallRecord
	for _, rec := range sess.Calls() {
		switch rec.Status {
		case run.CallRunning, run.CallNew, run.CallResuming:
			if !final {
				return false, nil
			}
		case run.CallSuspended:
			if _, ok := cs.approved[rec.Call.ID]; !ok && !final {
				return false, nil
			}
			suspended = append(suspended, rec)
		}
	}
	for _, rec := range sess.Calls() {
		if sess.Termination() != "" {
			return true, nil
		}
		if err := c.abandon(ctx, cs, e, rec); err != nil {
			return true, err
		}
	}
	if len(suspended) > 0 && sess.Termination() == "" {
		if err := c.resolve(ctx, cs, e, suspended); err != nil {
			return true, err
		}
	}
	if sess.Termination() != "" || sess.Status() != run.Running {
		return true, nil
	}
	o, err := sess.StepEnd(ctx)
	cs.continued = o.Continued
	return true, err
}

// abandon finishes a call whose PostToolUse never came.
func (c *claudeCode) abandon(ctx context.Context, cs *ccSession, e *entry, rec run.CallRecord) error {
	sess := e.sess
	noResult := model.Error("Claude Code reported no result for this call (the user denied it, or it failed)")
	if !cs.posts {
		// Only PreToolUse is installed: the call ran, or not; nobody says.
		noResult = model.ToolResult{Status: model.StatusSuccess,
			Message: "Claude Code reports no tool results to awaken-lua (no PostToolUse hook), so this result is unknown"}
	}
	switch rec.Status {
	case run.CallNew, run.CallResuming:
		d, _, err := sess.ToolGate(ctx, rec.Call)
		if err != nil || d.Decision == "suspend" {
			return err
		}
		if d.Decision == "allow" {
			if _, err := sess.BeforeToolExecute(ctx, rec.Call); err != nil {
				return err
			}
		}
		_, _, err = sess.AfterToolExecute(ctx, rec.Call, noResult)
		return err
	case run.CallRunning:
		if rec.Gate != nil && rec.Gate.Decision == "allow" && !rec.Started {
			if _, err := sess.BeforeToolExecute(ctx, rec.Call); err != nil {
				return err
			}
		}
		_, _, err := sess.AfterToolExecute(ctx, rec.Call, noResult)
		return err
	}
	return nil
}

// resolve settles suspended calls: the run waits (step_end), calls Claude
// Code ran after "ask" are resumed, gated again and given their result;
// the others are cancelled. A call suspended again is cancelled too:
// Claude Code's user already answered.
func (c *claudeCode) resolve(ctx context.Context, cs *ccSession, e *entry, suspended []run.CallRecord) error {
	sess := e.sess
	for round := 0; round < 2; round++ {
		if _, err := sess.StepEnd(ctx); err != nil || sess.Status() != run.Waiting {
			return err
		}
		var ds []run.ResumeDecision
		for _, rec := range suspended {
			if _, ok := cs.approved[rec.Call.ID]; ok && round == 0 {
				ds = append(ds, run.ResumeDecision{Target: rec.Call.ID, Action: "resume"})
			} else {
				ds = append(ds, run.ResumeDecision{Target: rec.Call.ID, Action: "cancel", Reason: "not approved in Claude Code"})
			}
		}
		if _, _, err := sess.Resume(ctx, ds); err != nil {
			return err
		}
		suspended = suspended[:0]
		for _, d := range ds {
			if d.Action != "resume" || sess.Termination() != "" {
				continue
			}
			rec, _ := findCall(e, d.Target)
			g, _, err := sess.ToolGate(ctx, rec.Call)
			if err != nil {
				return err
			}
			result := cs.approved[d.Target]
			switch g.Decision {
			case "suspend":
				suspended = append(suspended, rec)
				continue
			case "allow":
				if _, err := sess.BeforeToolExecute(ctx, rec.Call); err != nil {
					return err
				}
			}
			if _, _, err := sess.AfterToolExecute(ctx, rec.Call, result); err != nil {
				return err
			}
		}
		for _, d := range ds {
			delete(cs.approved, d.Target)
		}
		if len(suspended) == 0 {
			return nil
		}
	}
	return nil
}

func (c *claudeCode) postToolUse(ctx context.Context, cs *ccSession, in ccInput) (ccResult, error) {
	var res ccResult
	call, err := toolCall(in)
	if err != nil {
		return res, err
	}
	result := model.Success(in.ToolResponse)
	if in.HookEventName == evPostToolUseFailure {
		msg := fmt.Sprint(in.Error)
		if s, ok := in.Error.(string); ok {
			msg = s
		}
		result = model.Error(msg)
	}
	if d, err := value.Normalize(result.Data); err == nil {
		result.Data = d
	} else {
		result.Data = nil
	}
	e, err := c.openRun(ctx, cs)
	if err != nil || e == nil {
		return res, err // a call this adapter never gated (say, before a restart)
	}
	sess := e.sess
	rec, ok := findCall(e, call.ID)
	if !ok {
		return res, c.release(ctx, e, nil)
	}
	switch rec.Status {
	case run.CallSuspended:
		cs.approved[call.ID] = result // Claude Code's user approved the "ask"
	case run.CallRunning:
		if rec.Gate != nil && rec.Gate.Decision == "allow" {
			if !rec.Started {
				if _, err := sess.BeforeToolExecute(ctx, rec.Call); err != nil {
					return res, c.release(ctx, e, err)
				}
			}
			out, _, err := sess.AfterToolExecute(ctx, rec.Call, result)
			if err != nil {
				return res, c.release(ctx, e, err)
			}
			// A result transform (redaction) changed an MCP tool's output:
			// Claude Code lets a hook replace only those.
			if strings.HasPrefix(call.Name, "mcp__") && in.HookEventName == evPostToolUse &&
				out.Status == model.StatusSuccess && !reflect.DeepEqual(out.Data, result.Data) {
				res.mcpOutput, res.hasMCPOutput = out.Data, true
			}
		}
	}
	if stop := pluginStop(e); stop != "" {
		res.stop = stop
		return res, c.finishRun(ctx, cs, e, &res, false)
	}
	if sess.Termination() == "" && sess.Status() == run.Running {
		closed, err := c.closeStep(ctx, cs, e, false)
		if err != nil {
			return res, c.release(ctx, e, err)
		}
		if closed {
			// Claude infers next: open that inference so the context
			// messages plugins scheduled reach it now.
			e, err = c.drive(ctx, cs, e, &res, stReady, "")
			return res, c.release(ctx, e, err)
		}
	}
	return res, c.release(ctx, e, nil)
}
