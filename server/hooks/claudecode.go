package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/internal/lrusample"
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
//     offers its built-in tools plus the tools seen in the session (the
//     MaxSeenTools most recently used). The
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
//     (the call is cancelled). Its ticket does not expire: Claude Code's
//     user answers whenever, and the call then runs.
//   - A plugin's ctx:stop ends the run and answers {"continue": false}; the
//     step limit only starts a new run, so a long Claude Code turn goes on.
//   - Every event is answered 200 with the documented JSON. A failure
//     denies PreToolUse and PermissionRequest (fail closed) and answers {}
//     otherwise.

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

	// suspend is how a suspended call is answered (?suspend=): ask, or
	// defer for a headless Claude Code (claudecode_defer.go).
	suspend string
	// interrupted: the turn this Stop ends was aborted or failed (Cursor's
	// stop status), so the run ends without a runtime.continue: going on
	// would start the agent again against its user.
	interrupted bool
	// byInput: a PostToolUse without a call id of its own (Cursor's after
	// events, in a process that did not see the before event): its call
	// is the latest of the open step with this tool and input that has
	// not ended.
	byInput bool
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
	UpdatedInput             map[string]any `json:"updatedInput,omitzero"` // a rewrite to {} is sent
	AdditionalContext        string         `json:"additionalContext,omitempty"`
	Decision                 *ccPermission  `json:"decision,omitempty"` // PermissionRequest
	UpdatedToolOutput        any            `json:"updatedToolOutput,omitempty"`
	UpdatedMCPToolOutput     any            `json:"updatedMCPToolOutput,omitempty"` // Claude Code before v2.1.121
	hasOutput                bool
}

// ccPermission is PermissionRequest's answer to the question Claude Code
// is about to ask its user.
type ccPermission struct {
	Behavior     string         `json:"behavior"` // allow or deny
	Message      string         `json:"message,omitempty"`
	UpdatedInput map[string]any `json:"updatedInput,omitzero"`
}

// Bounds of the adapter's loops. Each turn of a loop moves a run by one
// phase call, so these only stop a bug from spinning; none is reached by a
// run that behaves:
//   - finishRun drives a run to its end: a few calls per step, and steps
//     that runtime.continue adds, which max_continues bounds.
//   - drive reaches a stage: at most end a run on its step limit, start
//     another, step_start, before_inference.
//   - toGate opens a step for a call: at most close an unoffering step and
//     open one that offers the tool.
const (
	maxFinishMoves = 1024
	maxDriveMoves  = 16
	maxGateMoves   = 8
)

// MaxCwd bounds the working directory an event reports (Linux's PATH_MAX):
// it is kept with the run and journaled with every phase.
const MaxCwd = 4096

// PreOnlyBatch bounds the calls of one step while the session sends no
// PostToolUse: more than Claude Code runs in parallel, few enough that an
// event's cost does not grow with the session.
const PreOnlyBatch = 32

// MaxStepCalls bounds the calls of one step of a session that sends
// PostToolUse: a call whose PostToolUse never comes (its user declined it)
// keeps its step open, and without PostToolBatch every later call of the
// turn would join that step, each event costing more than the last. Far
// more than Claude Code runs in parallel.
const MaxStepCalls = 256

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

// ccBuiltinTools are offered in every step, so calls Claude Code runs in
// parallel can join one step whichever built-in tool they use: the tools
// of Claude Code's tools reference (v2.1.240), and the older names earlier
// versions still send (Task before Agent, LS, MultiEdit, NotebookRead,
// BashOutput, KillBash, KillShell, SlashCommand). A tool missing here is
// taken for an MCP tool, and its first call in a batch fails "not
// available".
var ccBuiltinTools = []string{"Agent", "Artifact", "AskUserQuestion", "Bash", "BashOutput", "CronCreate", "CronDelete",
	"CronList", "Edit", "EndConversation", "EnterPlanMode", "EnterWorktree", "ExitPlanMode", "ExitWorktree", "Glob",
	"Grep", "KillBash", "KillShell", "LS", "LSP", "ListAgents", "ListMcpResourcesTool", "Monitor", "MultiEdit",
	"NotebookEdit", "NotebookRead", "PowerShell", "PushNotification", "Read", "ReadMcpResourceTool", "RemoteTrigger",
	"ReportFindings", "ScheduleWakeup", "SendMessage", "SendUserFile", "ShareOnboardingGuide", "Skill", "SlashCommand",
	"Task", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate", "TodoWrite", "ToolSearch",
	"WaitForMcpServers", "WebFetch", "WebSearch", "Workflow", "Write"}

type claudeCode struct {
	o Options
	// The hook protocols served through this adapter (hookadmit.go).
	proto        *hookProtocol[ccInput, ccOutput]
	codexProto   *hookProtocol[ccInput, ccOutput]
	geminiProto  *hookProtocol[geminiInput, geminiOutput]
	copilotProto *hookProtocol[copilotInput, copilotOutput]
	builtin      *offer // the offer of a session that used only built-in tools
	mu           sync.Mutex
	sessions     map[string]*ccSession
}

// ccSession is what the adapter keeps per Claude Code session, in memory
// (after a restart a session starts a new run on its thread). What of it
// changes later replies and records, hook --local carries from process to
// process (SessionFacts).
type ccSession struct {
	mu       sync.Mutex
	id       string
	agent    string
	runID    string                      // the open run; "" when none
	seen     []string                    // tools the session used that are not built in, the latest last (see)
	listed   map[string]bool             // tools the adapter offered in the open step (read only: an offer's)
	offer    *offer                      // the tools the session's steps offer
	approved map[string]model.ToolResult // nil until a call is approved
	// seenN counts the changes to seen, and offerN is the count offer was
	// made for: at the bound a change keeps seen's length.
	seenN, offerN int
	// held: the runs the current event has locked (see lock), in heldBuf
	// while they fit: an event holds one run, or two, and a slice of its
	// own would be one more object per session for the collector to mark.
	held    []Run
	heldBuf [2]Run
	// subRuns: the subagents' runs that a runtime.continue kept open at
	// their SubagentStop, oldest first.
	subRuns []SubRun
	// continued: the messages runtime.continue added when the open run's
	// last step ended.
	continued []model.Message
	// deferring: the open run waits on a call answered "defer"; the
	// events of Claude Code's exit and resume leave it waiting.
	deferring bool
	// looked: the session looked for a run it lost track of (openRun).
	looked bool
	// sub: the session is a subagent's (its id is its thread's).
	sub bool
	// posts: the session sends PostToolUse (or PostToolBatch). Without
	// them (only PreToolUse installed) no call is ever seen to finish, so a
	// step holds at most PreOnlyBatch calls instead of growing forever.
	posts bool
	gone  bool // (the flags sit together: no padding after each)
	// inEvent: an event holds the session, and the runs it locks take its
	// cwd. A run locked outside one (the session view) keeps its own, the
	// directory its waiting call was made in.
	inEvent bool
	// cwd is the working directory the current event reported, which the
	// runs it locks or starts take (lock, start); "" between events, so a
	// session holds no string of its own.
	cwd      string
	lastUsed atomic.Int64
}

func newClaudeCode(o Options) *claudeCode {
	c := &claudeCode{o: o, sessions: map[string]*ccSession{}, builtin: makeOffer(ccBuiltinTools, nil, "")}
	c.proto = &hookProtocol[ccInput, ccOutput]{agent: "Claude Code", event: ccEvent, name: ccName, failure: c.failure,
		serve: c.serve, decode: decodeCCInput}
	c.codexProto = &hookProtocol[ccInput, ccOutput]{agent: "Codex", event: ccEvent, name: ccName, failure: c.failure,
		serve: c.serveCodex, decode: decodeCCInput}
	c.geminiProto = &hookProtocol[geminiInput, geminiOutput]{agent: "Gemini CLI", event: geminiEvent, failure: c.geminiFailure,
		name: func(in *geminiInput) *string { return &in.HookEventName },
		serve: func(ctx context.Context, _ *http.Request, in *geminiInput, agent string) geminiOutput {
			return c.gemini(ctx, *in, agent)
		}}
	c.copilotProto = &hookProtocol[copilotInput, copilotOutput]{agent: "Copilot CLI", event: copilotEvent, failure: c.copilotFailure,
		serve: func(ctx context.Context, r *http.Request, in *copilotInput, agent string) copilotOutput {
			return c.copilot(ctx, copilotEvent(r, in, nil), *in, agent)
		}}
	return c
}

// session returns the session, locked.
func (c *claudeCode) session(id, agent string) *ccSession {
	for {
		c.mu.Lock()
		cs := c.sessions[id]
		if cs == nil {
			cs = &ccSession{id: id, agent: agent} // approved: made on the first approval
			cs.held = cs.heldBuf[:0]
			cs.lastUsed.Store(time.Now().UnixNano()) // not the one for shed to drop
			c.sessions[id] = cs
			c.shed(cs)
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

// shed keeps at most MaxSessions sessions (c.mu held): past it, it forgets
// the least recently used of a few sampled, keep (the one being added)
// excepted, as sweep forgets an idle one. A session waiting on a deferred
// call is kept (a person is to decide; sweep bounds its wait). The next
// event of a forgotten session starts a new run on its thread.
func (c *claudeCode) shed(keep *ccSession) {
	var buf [lrusample.Size]lrusample.Entry[string, *ccSession]
	used := func(_ string, cs *ccSession) (int64, bool) { return cs.lastUsed.Load(), cs != keep }
	for range lrusample.Size {
		if c.o.MaxSessions <= 0 || len(c.sessions) <= c.o.MaxSessions {
			return
		}
		forgot := false
		for _, en := range lrusample.Oldest(c.sessions, used, &buf) {
			victim := en.Val
			if !victim.mu.TryLock() {
				continue // busy, so not the one to forget: the next
			}
			if !victim.deferring {
				delete(c.sessions, victim.id)
				victim.gone, forgot = true, true
			}
			victim.mu.Unlock()
			if forgot {
				break
			}
		}
		if !forgot {
			return // all busy or deferring: the next new session tries again
		}
	}
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
		if cs.deferring && now.Sub(time.Unix(0, cs.lastUsed.Load())) <= MaxDeferHold {
			// A deferred call waits for a person, longer than a session
			// idles; its ticket's timeout bounds the wait, and MaxDeferHold
			// bounds what a host that never comes back holds.
			cs.mu.Unlock()
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
func (c *claudeCode) handle(w http.ResponseWriter, r *http.Request) error {
	return serveHook(&c.o, w, r, c.proto)
}

// ccEvent names a Claude Code event for its failure reply: PreToolUse
// whenever the body says so (whichever name a duplicate key left decoded),
// so a call that cannot be evaluated is denied.
func ccEvent(_ *http.Request, in *ccInput, body []byte) string {
	if g := guessEvent(body); g == evPreToolUse || in == nil {
		return g
	}
	return in.HookEventName
}

// ccName is where a Claude Code (or Codex) event names itself.
func ccName(in *ccInput) *string { return &in.HookEventName }

// serve answers a decoded Claude Code event (?suspend= says how a
// suspended call is answered).
func (c *claudeCode) serve(ctx context.Context, r *http.Request, in *ccInput, agent string) ccOutput {
	switch in.suspend = query(r, "suspend"); in.suspend {
	case "", suspendAsk, suspendDefer:
	default:
		return c.failure(in.HookEventName, fmt.Errorf("?suspend= is %q or %q, not %q", suspendAsk, suspendDefer, in.suspend))
	}
	return c.dispatch(ctx, *in, agent)
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
	c.o.Failed(err)
	reason := c.failClosed("Claude Code", eventName, err)
	switch eventName {
	case evPreToolUse:
		return ccOutput{HookSpecificOutput: &ccSpecific{HookEventName: evPreToolUse, PermissionDecision: "deny",
			PermissionDecisionReason: reason}}
	case evPermissionRequest:
		// As `awaken-lua hook` answers it when no reply comes: {} would
		// leave the call to the agent's own default, which a headless run
		// may take without asking anyone.
		return ccOutput{HookSpecificOutput: &ccSpecific{HookEventName: evPermissionRequest,
			Decision: &ccPermission{Behavior: "deny", Message: reason}}}
	}
	return ccOutput{}
}

// failClosed logs that an agent's hook failed on event, and returns the
// reason a tool call denied for it gives (every adapter fails closed on
// the events that ask permission for a call).
func (c *claudeCode) failClosed(agent, event string, err error) string {
	c.o.Log.LogAttrs(context.Background(), slog.LevelError, agent+" hook failed", slog.String("event", event),
		slog.String("error", err.Error()))
	return "awaken-lua could not evaluate this call, so it is denied (fail closed): " + err.Error()
}

// ccResult is what an event produced, before it is shaped for its event.
type ccResult struct {
	// toolOutput replaces the tool's output (PostToolUse), when set; mcp
	// says the tool is an MCP tool's.
	toolOutput       any
	hasToolOutput    bool
	mcp              bool
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
	if in.SessionID == "" || len(in.SessionID) > c.o.MaxIDLen || !utf8.ValidString(in.SessionID) {
		return c.failure(in.HookEventName, fmt.Errorf("session_id must be a non-empty UTF-8 string of at most %d bytes", c.o.MaxIDLen))
	}
	if len(in.Cwd) > MaxCwd {
		return c.failure(in.HookEventName, fmt.Errorf("cwd must be a path of at most %d bytes, not %d", MaxCwd, len(in.Cwd)))
	}
	key := in.SessionID
	if in.AgentID != "" && subagentEvents[in.HookEventName] {
		// A subagent's tool calls are its own run's, on its thread, which
		// its SubagentStop answers: in the main run they would join (and
		// be ended with) the main agent's steps.
		if len(in.AgentID) > c.o.MaxIDLen || !utf8.ValidString(in.AgentID) {
			return c.failure(in.HookEventName, fmt.Errorf("agent_id must be a UTF-8 string of at most %d bytes", c.o.MaxIDLen))
		}
		key = subagentThread(in.SessionID, in.AgentID)
		// A deferred call waits where the session's view shows it, and
		// Claude Code defers only a call made alone by the main agent: a
		// subagent's suspended call is asked.
		in.suspend = ""
	}
	cs := c.session(key, agent)
	cs.sub = key != in.SessionID
	cs.cwd, cs.inEvent = in.Cwd, true
	defer func() {
		cs.cwd, cs.inEvent = "", false
		cs.lastUsed.Store(time.Now().UnixNano())
		cs.mu.Unlock()
	}()
	defer func() {
		if v := recover(); v != nil {
			c.releaseHeld(context.WithoutCancel(ctx), cs)
			panic(v) // the admission answers it, failing closed
		}
	}()
	res, err := c.event(ctx, cs, in)
	if err != nil {
		return c.failure(in.HookEventName, err)
	}
	return shape(in.HookEventName, res)
}

// subagentEvents are the events that, carrying an agent_id, come from a
// subagent's own steps.
var subagentEvents = map[string]bool{evPreToolUse: true, evPermissionRequest: true, evPostToolUse: true,
	evPostToolUseFailure: true, evPostToolBatch: true}

// subagentThread is the thread of a subagent's runs.
func subagentThread(session, agentID string) string { return session + subagentInfix + agentID }

// subagentInfix joins a session id and a subagent's agent_id in the
// subagent's thread.
const subagentInfix = "/subagent/"

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
	case evPostToolUse, evPostToolUseFailure, evPostToolBatch, evUserPromptSubmit, evSessionStart:
		spec.AdditionalContext = strings.Join(res.context, "\n\n")
		if res.hasToolOutput {
			spec.UpdatedToolOutput, spec.hasOutput = res.toolOutput, true
			if res.mcp {
				spec.UpdatedMCPToolOutput = res.toolOutput
			}
		}
	case evStop, evSubagentStop:
		out.Decision, out.Reason = res.decision, res.reason
	case evPermissionRequest:
		if res.decision != "" {
			spec.Decision = &ccPermission{Behavior: res.decision, Message: res.reason, UpdatedInput: res.updated}
		}
	}
	if spec.PermissionDecision != "" || spec.AdditionalContext != "" || spec.UpdatedInput != nil || spec.Decision != nil || spec.hasOutput {
		out.HookSpecificOutput = spec
	}
	return out
}

func (c *claudeCode) event(ctx context.Context, cs *ccSession, in ccInput) (ccResult, error) {
	var res ccResult
	if cs.deferring {
		switch in.HookEventName {
		case evSessionStart, evSessionEnd, evStop, evPostToolBatch:
			// Claude Code exits with a deferred call pending, and is
			// resumed onto it: the run keeps waiting for its decision.
			return res, nil
		}
	}
	switch in.HookEventName {
	case evSessionStart:
		if in.Source == "compact" {
			// Claude Code compacted the conversation, which it also does
			// in the middle of a turn: a turn still open goes on.
			e, err := c.openRun(ctx, cs)
			if err != nil {
				return res, err
			}
			if e != nil {
				c.unlock(cs, e)
				return res, nil
			}
		}
		// A one-step run lets plugins greet the session: context messages
		// placed in its before_inference become additionalContext.
		if err := c.endOpenRun(ctx, cs); err != nil {
			return res, err
		}
		e, err := c.newRun(ctx, cs, nil)
		if err != nil {
			return res, err
		}
		e, err = c.drive(ctx, cs, e, &res, run.StageInferenceReady, "")
		if err == nil && e != nil && e.Session().Termination() == "" {
			// No model answers a session start: the run ends without
			// telling after_inference hooks that one did.
			_, err = e.Session().EndUninferred(ctx)
		}
		if err == nil && e != nil {
			err = c.finishRun(ctx, cs, e, &res, false)
			e = nil
		}
		return res, c.release(ctx, cs, e, err)
	case evUserPromptSubmit:
		if err := c.endOpenRun(ctx, cs); err != nil {
			return res, err
		}
		e, err := c.newRun(ctx, cs, []model.Message{{Role: model.RoleUser, Content: in.Prompt}})
		if err != nil {
			return res, err
		}
		e, err = c.drive(ctx, cs, e, &res, run.StageInferenceReady, "")
		return res, c.release(ctx, cs, e, err)
	case evPreToolUse:
		return c.preToolUse(ctx, cs, in)
	case evPermissionRequest:
		return c.permissionRequest(ctx, cs, in)
	case evSubagentStop:
		return c.subagentStop(ctx, cs, in)
	case evPostToolBatch:
		cs.posts = true
		// Claude Code ran the batch: the step ends here, and calls whose
		// PostToolUse never came are finished with an error result.
		e, err := c.openRun(ctx, cs)
		if err != nil || e == nil {
			return res, err
		}
		if stageOf(e) == run.StageInferred {
			var closed bool
			closed, err = c.closeStep(ctx, cs, e, true)
			if stop := pluginStop(e); err == nil && stop != "" {
				// A plugin stopped the run as the step ended (say, in the
				// after_tool_execute of a call that never reported): Claude
				// is told to stop, as at a PostToolUse.
				res.stop = stop
				return res, c.finishRun(ctx, cs, e, &res, false)
			}
			if sess := e.Session(); closed && err == nil && sess.Termination() == "" && sess.Status() == run.Running {
				// Claude infers next: open that inference so the context
				// messages plugins scheduled reach it now.
				e, err = c.drive(ctx, cs, e, &res, run.StageInferenceReady, "")
			}
		}
		return res, c.release(ctx, cs, e, err)
	case evPostToolUse, evPostToolUseFailure:
		cs.posts = true
		return c.postToolUse(ctx, cs, in)
	case evStop:
		e, err := c.openRun(ctx, cs)
		if err != nil || e == nil {
			return res, err
		}
		return res, c.finishRun(ctx, cs, e, &res, !in.interrupted)
	case evSessionEnd:
		err := c.endOpenRun(ctx, cs)
		if err == nil {
			err = c.endSubagents(ctx, cs)
		}
		c.forget(cs)
		return res, err
	}
	return res, nil
}

// endSubagents ends the runs of the session's subagents that are still
// open (an interrupted or background subagent sends no SubagentStop), at
// SessionEnd, and forgets their sessions. The session's lock is taken
// before a subagent's, never the other way.
func (c *claudeCode) endSubagents(ctx context.Context, cs *ccSession) error {
	prefix := subagentThread(cs.id, "")
	c.mu.Lock()
	var subs []*ccSession
	for id, sub := range c.sessions {
		if strings.HasPrefix(id, prefix) {
			subs = append(subs, sub)
		}
	}
	c.mu.Unlock()
	// In a fixed order, not the map's: the runs' ends are audited and
	// journaled in it, and a session replayed (or served by hook --local)
	// must record them as it did.
	slices.SortFunc(subs, func(a, b *ccSession) int { return strings.Compare(a.id, b.id) })
	for _, sub := range subs {
		sub.mu.Lock()
		var err error
		if !sub.gone {
			sub.cwd, sub.inEvent = cs.cwd, true // the run ends on this event
			err = c.endOpenRun(ctx, sub)
			sub.cwd, sub.inEvent = "", false
			c.forget(sub)
		}
		sub.mu.Unlock()
		if err != nil {
			return err
		}
	}
	// A run a runtime.continue kept open at a SubagentStop.
	kept := cs.subRuns
	cs.subRuns = nil
	for _, r := range kept {
		if e, err := c.lock(ctx, cs, r.Run); err == nil {
			if err := c.finishRun(ctx, cs, e, &ccResult{}, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// release settles (checkpoints) and unlocks the run an event worked on.
func (c *claudeCode) release(ctx context.Context, cs *ccSession, e Run, err error) error {
	if e == nil {
		return err
	}
	if serr := c.o.Runs.Settle(ctx, e); err == nil {
		err = serr
	}
	c.unlock(cs, e)
	return err
}

// lock, start and unlock take and give back a run's lock for an event of
// cs, noting what it holds: an event that panics leaves no run locked
// (releaseHeld), or the session's next event would wait for ever. A run
// an event locks or starts takes the event's working directory, so every
// phase the event drives (the gate of its call above all) reads it; one
// locked between events (the session view) keeps its own.
func (c *claudeCode) lock(ctx context.Context, cs *ccSession, id string) (Run, error) {
	e, err := c.o.Runs.Lock(ctx, id)
	if err == nil {
		if cs.inEvent && !e.Done() {
			e.Session().SetCwd(cs.cwd)
		}
		cs.hold(e)
	}
	return e, err
}

func (c *claudeCode) start(ctx context.Context, cs *ccSession, agent, thread string, msgs []model.Message) (Run, error) {
	e, err := c.o.Runs.Start(ctx, agent, thread, msgs, cs.cwd)
	if err == nil {
		cs.hold(e)
	}
	return e, err
}

func (c *claudeCode) unlock(cs *ccSession, e Run) {
	if i := slices.Index(cs.held, e); i >= 0 {
		cs.held = slices.Delete(cs.held, i, i+1)
	}
	if len(cs.held) == 0 {
		cs.held = cs.heldBuf[:0] // back from the heap, if it had to go there
	}
	c.o.Runs.Unlock(e)
}

// hold notes a run the current event locked (cs.mu held).
func (cs *ccSession) hold(e Run) {
	spill := len(cs.held) == len(cs.heldBuf) && &cs.held[0] == &cs.heldBuf[0]
	cs.held = append(cs.held, e)
	if spill {
		clear(cs.heldBuf[:]) // the runs moved with the slice
	}
}

// releaseHeld settles and unlocks the runs an event still holds when it
// panicked.
func (c *claudeCode) releaseHeld(ctx context.Context, cs *ccSession) {
	for len(cs.held) > 0 {
		e := cs.held[len(cs.held)-1]
		if err := c.release(ctx, cs, e, nil); err != nil {
			c.o.Log.LogAttrs(ctx, slog.LevelError, "settling a run after a failed event", slog.String("run_id", e.ID()), slog.String("error", err.Error()))
		}
	}
}

// openRun returns the session's open run, locked, or nil.
func (c *claudeCode) openRun(ctx context.Context, cs *ccSession) (Run, error) {
	adopted := false
	if cs.runID == "" && !cs.looked {
		// A session the adapter let go of (past [server] max_runs) while
		// its run stayed: the run is taken up again, so that a PostToolUse
		// still finds its call and after_tool_execute runs.
		cs.looked = true
		cs.runID = c.o.Runs.ThreadHolder(cs.id)
		adopted = cs.runID != ""
	}
	if cs.runID == "" {
		return nil, nil
	}
	e, err := c.lock(ctx, cs, cs.runID)
	if err != nil {
		if errors.Is(err, ErrNoRun) {
			cs.runID = ""
			return nil, nil
		}
		return nil, err
	}
	// An adopted run must be on the session's own thread: one a stale or
	// hand-edited hook --local sessions record names may be another's.
	own := !adopted || (c.adoptable(cs, e) && e.Session().ThreadID() == cs.id)
	if adopted && own && !e.Done() {
		c.relist(cs, e)
	}
	if e.Done() || !own {
		// A waiting run, or another agent's, is left to newRun, which ends
		// it as before; another thread's is left alone (its hold on this
		// session's thread was dropped when it was restored).
		c.unlock(cs, e)
		cs.runID = ""
		if cs.sub && !adopted {
			// A subagent's run ended at its SubagentStop, which may have
			// kept another open on the thread (runtime.continue): the
			// subagent's next calls join that one.
			cs.looked = false
			return c.openRun(ctx, cs)
		}
		return nil, nil
	}
	return e, nil
}

// relist gives a session that takes up a run it lost track of (another
// process's, with hook --local) what it knew of the run's open step: the
// tools that step offers, and so the ones outside the built-in set that
// the session used. Without them the next call would look unoffered, fail
// "not available" and be gated again in a step of its own.
func (c *claudeCode) relist(cs *ccSession, e Run) {
	offered := e.Session().Offered()
	if offered == nil {
		return
	}
	cs.listed = make(map[string]bool, len(offered))
	for _, n := range offered {
		cs.listed[n] = true
		if !slices.Contains(cs.seen, n) { // (a tool seen already keeps its place)
			cs.see(n, c.builtin.names)
		}
	}
}

// adoptable reports whether the session may take up e, a running run that
// holds its thread while the session lost track of it: a run of the
// session's agent, not one that a /v1/runs client or another agent started
// on the same thread id.
func (c *claudeCode) adoptable(cs *ccSession, e Run) bool {
	sess := e.Session()
	return sess.Status() == run.Running && sess.AgentID() == c.o.Runs.AgentID(cs.agent)
}

// newRun starts a run on the session's thread, after ending whatever run
// still holds the thread (a run the adapter lost track of, or one left
// waiting by a crash).
func (c *claudeCode) newRun(ctx context.Context, cs *ccSession, msgs []model.Message) (Run, error) {
	if err := c.clearThread(ctx, cs, cs.id); err != nil {
		return nil, err
	}
	e, err := c.start(ctx, cs, cs.agent, cs.id, msgs)
	if err != nil {
		return nil, err
	}
	cs.runID = e.ID()
	cs.deferring = false
	cs.listed = nil
	clear(cs.approved)
	return e, nil
}

// clearThread ends the run that holds thread, in memory or waiting in the
// store, so that a new run may start on it.
func (c *claudeCode) clearThread(ctx context.Context, cs *ccSession, thread string) error {
	if holder := c.o.Runs.ThreadHolder(thread); holder != "" {
		if e, err := c.lock(ctx, cs, holder); err == nil {
			if err := c.finishRun(ctx, cs, e, &ccResult{}, false); err != nil {
				return err
			}
		}
	}
	th, ok, err := c.o.Runs.Store().Thread(ctx, thread)
	if err != nil || !ok || th.Waiting == "" {
		return err
	}
	e, err := c.lock(ctx, cs, th.Waiting)
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
func (c *claudeCode) finishRun(ctx context.Context, cs *ccSession, e Run, res *ccResult, stop bool) (err error) {
	defer func() { err = c.release(ctx, cs, e, err) }()
	if cs.runID == e.ID() {
		cs.runID = ""
	}
	sess := e.Session()
	cs.continued = nil
	for range maxFinishMoves {
		if stop && len(cs.continued) > 0 && sess.Termination() == "" && stageOf(e) == run.StageStepEnded {
			// The continued step starts now, not at Claude's next event: a
			// plugin that stops it at its step_start (the budget, past
			// max_steps) ends the run here, and Claude is let stop rather
			// than told to go on into a step that is already over.
			if _, err = sess.StepStart(ctx); err != nil {
				return err
			}
			if sess.Termination() != "" {
				cs.continued = nil
				continue
			}
		}
		if stop && len(cs.continued) > 0 && sess.Termination() == "" {
			parts := make([]string, len(cs.continued))
			for j, m := range cs.continued {
				parts[j] = m.Content
			}
			res.decision, res.reason = "block", strings.Join(parts, "\n\n")
			cs.continued = nil
			cs.runID = e.ID()
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
		case run.StageRunStarted, run.StageStepEnded:
			_, err = sess.StepStart(ctx)
		case run.StageStepStarted:
			err = c.beforeInference(ctx, cs, e, res, "")
		case run.StageInferenceReady:
			_, err = sess.AfterInference(ctx, model.Response{})
		case run.StageInferred:
			_, err = c.closeStep(ctx, cs, e, true)
		default:
			return fmt.Errorf("run %s is at an unknown stage %q", e.ID(), stageOf(e))
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("run %s did not end", e.ID())
}

func stageOf(e Run) run.Stage { return e.Session().Stage() }

// offer is the tools a step offers Claude Code: its built-in tools and
// the other tools the session used (seen). Read only once made: sessions share
// the built-in one, and a session keeps its own until it uses a new tool.
type offer struct {
	names map[string]bool
	specs []model.ToolSpec // sorted by name
}

// MaxSeenTools bounds the tools outside Claude Code's built-in set that a
// session's steps offer: every step offers them, so a session that used
// ever more of them (MCP servers come and go) would make each event cost
// more. Past it the least recently used is let go of; a call of it is
// then gated again in a step that offers it, as a new tool's first call.
const MaxSeenTools = 256

// see notes that the session used the tool name.
func (cs *ccSession) see(name string, builtin map[string]bool) {
	if builtin[name] {
		return
	}
	if i := slices.Index(cs.seen, name); i >= 0 {
		// The latest last, so that the bound lets go of the least recently
		// used; the set, and so the offer, is the same.
		copy(cs.seen[i:], cs.seen[i+1:])
		cs.seen[len(cs.seen)-1] = name
		return
	}
	if len(cs.seen) >= MaxSeenTools {
		cs.seen = slices.Delete(cs.seen, 0, 1)
	}
	cs.seen = append(cs.seen, name)
	cs.seenN++
}

// offerFor makes the offer for a session's seen tools and extra; the
// built-in offer when they are all built in.
func (c *claudeCode) offerFor(seen []string, extra string) *offer {
	if len(seen) == 0 && (extra == "" || c.builtin.names[extra]) {
		return c.builtin
	}
	return makeOffer(ccBuiltinTools, seen, extra)
}

func makeOffer(builtins []string, seen []string, extra string) *offer {
	names := map[string]bool{}
	for _, n := range builtins {
		names[n] = true
	}
	for _, n := range seen {
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
	return &offer{names: names, specs: specs}
}

// offerOf is the offer of cs's next step, which offers extra too.
func (c *claudeCode) offerOf(cs *ccSession, extra string) *offer {
	o := cs.offer
	if o == nil || cs.offerN != cs.seenN || (extra != "" && !o.names[extra]) {
		o = c.offerFor(cs.seen, extra)
		cs.offer, cs.offerN = o, cs.seenN
	}
	return o
}

// beforeInference runs before_inference offering Claude Code's tools, and
// collects the context messages plugins placed.
func (c *claudeCode) beforeInference(ctx context.Context, cs *ccSession, e Run, res *ccResult, extra string) error {
	o := c.offerOf(cs, extra)
	_, out, err := e.Session().BeforeInference(ctx, model.Request{Tools: o.specs})
	cs.listed = o.names
	for _, m := range out.Context {
		if m.Content != "" {
			res.context = append(res.context, m.Content)
		}
	}
	return err
}

// drive advances e to stage want (run.StageInferenceReady: an inference is open; run.StageInferred:
// the call is in the open step), starting new steps and, when a run ends on
// the step limit, new runs. It returns the (possibly new) run, locked.
func (c *claudeCode) drive(ctx context.Context, cs *ccSession, e Run, res *ccResult, want run.Stage, call string) (Run, error) {
	for range maxDriveMoves {
		sess := e.Session()
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
		case st == run.StageRunStarted || st == run.StageStepEnded:
			_, err = sess.StepStart(ctx)
		case st == run.StageStepStarted:
			err = c.beforeInference(ctx, cs, e, res, call)
		case st == run.StageInferenceReady && want == run.StageInferred:
			return e, nil // the caller answers the inference with its call
		case st == run.StageInferred && want == run.StageInferenceReady:
			_, err = c.closeStep(ctx, cs, e, true)
		default:
			return e, fmt.Errorf("run %s is at stage %q, not %q", e.ID(), st, want)
		}
		if err != nil {
			return e, err
		}
	}
	return e, fmt.Errorf("run %s did not reach %s", e.ID(), want)
}

// pluginStop is the stop reason when a plugin stopped the run (not the
// step limit), else "".
func pluginStop(e Run) string {
	t := e.Session().Ended()
	if !t.PluginStopped() {
		return ""
	}
	reason := "awaken-lua: a plugin stopped the run (" + t.String() + ")"
	if v, err := e.Session().Snapshot().Lookup(engine.KeyStop); err == nil {
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
	var args map[string]any
	switch v := in.ToolInput.(type) {
	case nil:
		args = map[string]any{}
	case map[string]any:
		args = v
	default:
		args = map[string]any{"input": v}
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

func findCall(e Run, id string) (run.CallRecord, bool) { return e.Session().Call(id) }
