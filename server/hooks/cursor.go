package hooks

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/awaken-lua/awaken-lua/internal/lrusample"
)

// The Cursor adapter (POST /v1/hooks/cursor) speaks Cursor's hook protocol
// by translation: each Cursor event becomes the Claude Code event that
// means the same, the Claude Code adapter decides it on the same sessions
// and runs, and its answer becomes Cursor's reply. Where Cursor cannot say
// what the policy decided, the reply takes the safe side (server/README.md,
// "Cursor"):
//
//   - a rewrite: Cursor cannot replace a command's arguments, so the call
//     is denied with the rewritten arguments in the message;
//   - ask on beforeReadFile (which only allows or denies): deny;
//   - set_result: Cursor cannot answer for the tool, so the call is denied
//     with the result as the agent's message.

// cursorInput is a Cursor hook event (the fields the adapter reads).
type cursorInput struct {
	ConversationID string `json:"conversation_id"`
	GenerationID   string `json:"generation_id"`
	HookEventName  string `json:"hook_event_name"`
	Command        string `json:"command"`
	Cwd            string `json:"cwd"`
	// WorkspaceRoots stands in for cwd on the events without one
	// (cursorCwd); read leniently, as nothing else depends on it.
	WorkspaceRoots json.RawMessage `json:"workspace_roots"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"` // beforeMCPExecution: a JSON string; preToolUse: an object
	FilePath       string          `json:"file_path"`
	Prompt         string          `json:"prompt"`
	Status         string          `json:"status"`
	LoopCount      int             `json:"loop_count"`
	Output         string          `json:"output"`
	ResultJSON     string          `json:"result_json"`
}

// cursorOutput is a Cursor hook reply.
type cursorOutput struct {
	Permission      string `json:"permission,omitempty"`
	UserMessage     string `json:"user_message,omitempty"`
	AgentMessage    string `json:"agent_message,omitempty"`
	Continue        *bool  `json:"continue,omitempty"`
	FollowupMessage string `json:"followup_message,omitempty"`
}

// Cursor's events.
const (
	cuSessionStart         = "sessionStart"
	cuSessionEnd           = "sessionEnd"
	cuBeforeSubmitPrompt   = "beforeSubmitPrompt"
	cuPreToolUse           = "preToolUse"
	cuPostToolUse          = "postToolUse"
	cuBeforeShell          = "beforeShellExecution"
	cuAfterShell           = "afterShellExecution"
	cuBeforeMCP            = "beforeMCPExecution"
	cuAfterMCP             = "afterMCPExecution"
	cuBeforeReadFile       = "beforeReadFile"
	cuAfterFileEdit        = "afterFileEdit"
	cuStop                 = "stop"
	cursorPendingPerThread = 64
)

// cursorTools maps the tools Cursor's preToolUse and postToolUse name to
// Claude Code's, with their arguments renamed, so Bash(rm *) applies to
// Shell as it does to beforeShellExecution, and Read and Edit rules to the
// file a Read, Write, StrReplace or EditNotebook touches. Delete is a
// Write of its path (under any of the names it has been seen with; none
// of them leaves a path that cannot be judged, which deny rules deny).
var cursorTools = map[string]agentTool{
	"Shell":        {"Bash", map[string]string{"command": "command", "working_directory": "workdir"}},
	"Read":         {"Read", map[string]string{"path": "file_path"}},
	"Write":        {"Write", map[string]string{"path": "file_path", "contents": "content"}},
	"StrReplace":   {"Edit", map[string]string{"path": "file_path"}},
	"EditNotebook": {"NotebookEdit", map[string]string{"target_notebook": "notebook_path"}},
	"Delete":       {"Write", map[string]string{"path": "file_path", "target_path": "file_path", "target_file": "file_path", "file_path": "file_path"}},
	"Glob":         {"Glob", map[string]string{"glob_pattern": "pattern", "target_directory": "path"}},
	"WebSearch":    {"WebSearch", map[string]string{"search_term": "query"}},
}

// cursorPermissionEvents decide a tool's permission: they fail closed.
var cursorPermissionEvents = map[string]bool{cuPreToolUse: true, cuBeforeShell: true, cuBeforeMCP: true, cuBeforeReadFile: true}

var cursorPermissionPrefix = regexp.MustCompile(`"hook_event_name"\s*:\s*"(preToolUse|beforeShellExecution|beforeMCPExecution|beforeReadFile)"`)

// cursor keeps, per conversation, the ids it gave calls that have not
// ended: Cursor's events carry none, so an after event finds its call by
// tool and arguments.
type cursor struct {
	cc      *claudeCode
	proto   *hookProtocol[cursorInput, cursorOutput]
	mu      sync.Mutex
	seq     uint64
	pending map[string][]cursorCall
	// prefix makes this adapter's call ids its own: with `hook --local`
	// every event is a new adapter whose seq starts again, and the
	// conversation's run, carried between them, would take a later call
	// for an earlier one of the same id.
	prefix string
}

type cursorCall struct {
	id, key string
	seq     uint64 // when it began: the order of ids
}

func newCursor(cc *claudeCode) *cursor {
	cu := &cursor{cc: cc, pending: map[string][]cursorCall{}, prefix: "cursor_" + rand.Text()[:13] + "_"}
	cu.proto = &hookProtocol[cursorInput, cursorOutput]{agent: "Cursor", event: cursorEvent, failure: cu.failure,
		name: func(in *cursorInput) *string { return &in.HookEventName },
		serve: func(ctx context.Context, _ *http.Request, in *cursorInput, agent string) cursorOutput {
			return cu.event(ctx, *in, agent)
		}}
	return cu
}

func (cu *cursor) handle(w http.ResponseWriter, r *http.Request) error {
	return serveHook(&cu.cc.o, w, r, cu.proto)
}

// cursorEvent names a Cursor event for its failure reply: a permission
// event whenever the body names one.
func cursorEvent(_ *http.Request, in *cursorInput, body []byte) string {
	if m := cursorPermissionPrefix.FindSubmatch(body); m != nil {
		return string(m[1])
	}
	if in == nil {
		return ""
	}
	return in.HookEventName
}

// failure denies a tool-permission event (fail closed) and lets the rest
// carry on.
func (cu *cursor) failure(event string, err error) cursorOutput {
	msg := cu.cc.failClosed("Cursor", event, err)
	if cursorPermissionEvents[event] {
		return cursorOutput{Permission: "deny", UserMessage: msg, AgentMessage: msg}
	}
	return cursorOutput{}
}

// cursorCwd is the working directory of a Cursor event: its cwd (shell
// events), else the workspace root that holds the event's file, else the
// first root. Cursor runs the agent in its workspace, so that is where
// ./x and bare path rules anchor; without a root, none (such rules then
// cannot be judged and deny).
func cursorCwd(in cursorInput) string {
	if in.Cwd != "" || len(in.WorkspaceRoots) == 0 {
		return in.Cwd
	}
	var roots []string
	if json.Unmarshal(in.WorkspaceRoots, &roots) != nil || len(roots) == 0 {
		return ""
	}
	best := ""
	for _, r := range roots {
		r = strings.TrimSuffix(r, "/")
		if r != "" && len(r) > len(best) && strings.HasPrefix(in.FilePath, r+"/") {
			best = r
		}
	}
	if best == "" {
		best = roots[0]
	}
	return best
}

// event translates one Cursor event, has the Claude Code adapter decide
// it, and translates the answer back.
func (cu *cursor) event(ctx context.Context, in cursorInput, agent string) cursorOutput {
	if in.ConversationID == "" {
		return cu.failure(in.HookEventName, errors.New("conversation_id must be a non-empty string"))
	}
	cc := ccInput{SessionID: in.ConversationID, Cwd: cursorCwd(in)}
	switch in.HookEventName {
	case cuSessionStart:
		cc.HookEventName = evSessionStart
	case cuSessionEnd:
		cc.HookEventName = evSessionEnd
		// No after event is coming for the calls still pending (denied by
		// Cursor or its user): kept, they would stay until other
		// conversations pushed them out.
		defer cu.forgetConversation(in.ConversationID)
	case cuBeforeSubmitPrompt:
		cc.HookEventName, cc.Prompt = evUserPromptSubmit, in.Prompt
	case cuStop:
		cc.HookEventName, cc.StopHookActive = evStop, in.LoopCount > 0
		// Cursor submits a followup_message as the user's next message:
		// after a turn the user aborted (or that failed) that would start
		// the agent again.
		cc.interrupted = in.Status != "" && in.Status != "completed"
	case cuBeforeShell, cuBeforeMCP, cuBeforeReadFile, cuPreToolUse:
		name, args, err := cursorCallOf(in)
		if err != nil {
			return cu.failure(in.HookEventName, err)
		}
		cc.HookEventName, cc.ToolName, cc.ToolInput = evPreToolUse, name, args
		cc.ToolUseID = cu.begin(in.ConversationID, name, args)
	case cuAfterShell, cuAfterMCP, cuPostToolUse:
		name, args, err := cursorCallOf(in)
		if err != nil {
			return cursorOutput{}
		}
		// A call this adapter does not know (hook --local runs each event
		// in a process of its own; a sidecar forgets calls past its
		// bounds) is looked for in the conversation's open step, by tool
		// and input.
		id := cu.end(in.ConversationID, name, args)
		cc.HookEventName, cc.ToolName, cc.ToolInput, cc.ToolUseID = evPostToolUse, name, args, id
		cc.byInput = id == ""
		cc.ToolResponse = map[string]any{"output": in.Output}
		if in.ResultJSON != "" {
			var v any
			if json.Unmarshal([]byte(in.ResultJSON), &v) == nil {
				cc.ToolResponse = v
			}
		}
	default:
		return cursorOutput{} // afterFileEdit, afterAgentResponse, ...: nothing to decide
	}
	out := cu.cc.dispatch(ctx, cc, agent)
	r := cursorReply(in.HookEventName, out)
	if r.Permission == "deny" && cc.HookEventName == evPreToolUse {
		// Cursor does not run it: no after event is coming for it.
		cu.forget(in.ConversationID, cc.ToolUseID)
	}
	return r
}

// cursorCallOf is the tool call a Cursor event is about, named as Claude
// Code names it, so the same rules (Bash(rm *), Read(./.env)) apply.
func cursorCallOf(in cursorInput) (string, map[string]any, error) {
	switch in.HookEventName {
	case cuBeforeShell, cuAfterShell:
		if in.Command == "" {
			return "", nil, errors.New("command must be a non-empty string")
		}
		return "Bash", map[string]any{"command": in.Command}, nil
	case cuBeforeReadFile:
		if in.FilePath == "" {
			return "", nil, errors.New("file_path must be a non-empty string")
		}
		return "Read", map[string]any{"file_path": in.FilePath}, nil
	}
	if in.ToolName == "" {
		return "", nil, errors.New("tool_name must be a non-empty string")
	}
	args := map[string]any{}
	if len(in.ToolInput) > 0 && string(in.ToolInput) != "null" {
		raw := []byte(in.ToolInput)
		var s string
		if json.Unmarshal(raw, &s) == nil { // beforeMCPExecution: a JSON string
			raw = []byte(s)
		}
		if err := json.Unmarshal(raw, &args); err != nil {
			return "", nil, fmt.Errorf("tool_input is not a JSON object: %v", err)
		}
	}
	name := in.ToolName
	if in.HookEventName == cuBeforeMCP || in.HookEventName == cuAfterMCP {
		if !strings.HasPrefix(name, "mcp__") {
			name = "mcp__" + name // rules name MCP tools as Claude Code does
		}
		return name, args, nil
	}
	// The renames need not be undone: cursorReply denies a rewrite.
	name, args, _, err := asClaudeCode(cursorTools, name, args)
	return name, args, err
}

func callKey(name string, args map[string]any) string {
	b, _ := json.Marshal(args)
	return name + "\x00" + string(b)
}

// begin gives a call an id and remembers it until its after event.
func (cu *cursor) begin(conv, name string, args map[string]any) string {
	cu.mu.Lock()
	defer cu.mu.Unlock()
	cu.seq++
	id := cu.prefix + strconv.FormatUint(cu.seq, 10)
	if _, known := cu.pending[conv]; !known && cu.cc.o.MaxSessions > 0 && len(cu.pending) >= cu.cc.o.MaxSessions {
		// Past the bound a conversation's calls that never got their
		// after event are forgotten: those of the conversation whose last
		// call is the oldest of a few sampled.
		var buf [lrusample.Size]lrusample.Entry[string, []cursorCall]
		if sample := lrusample.Oldest(cu.pending, func(_ string, l []cursorCall) (int64, bool) {
			return int64(l[len(l)-1].seq), true
		}, &buf); len(sample) > 0 {
			delete(cu.pending, sample[0].Key)
		}
	}
	list := append(cu.pending[conv], cursorCall{id: id, key: callKey(name, args), seq: cu.seq})
	if len(list) > cursorPendingPerThread {
		list = list[len(list)-cursorPendingPerThread:]
	}
	cu.pending[conv] = list
	return id
}

// end finds the latest call of the conversation with this tool and
// arguments, and forgets it. The latest: Cursor runs a conversation's
// calls one at a time, so an earlier one with the same arguments is one
// it never ran (the user declined it, and the agent asked again).
func (cu *cursor) end(conv, name string, args map[string]any) string {
	cu.mu.Lock()
	defer cu.mu.Unlock()
	key := callKey(name, args)
	list := cu.pending[conv]
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].key == key {
			id := list[i].id
			cu.drop(conv, i)
			return id
		}
	}
	return ""
}

// forget drops the pending call id of a conversation.
func (cu *cursor) forget(conv, id string) {
	cu.mu.Lock()
	defer cu.mu.Unlock()
	for i, c := range cu.pending[conv] {
		if c.id == id {
			cu.drop(conv, i)
			return
		}
	}
}

// forgetConversation drops every pending call of conv.
func (cu *cursor) forgetConversation(conv string) {
	cu.mu.Lock()
	defer cu.mu.Unlock()
	delete(cu.pending, conv)
}

// drop removes the i-th pending call of conv (cu.mu held).
func (cu *cursor) drop(conv string, i int) {
	list := cu.pending[conv]
	cu.pending[conv] = append(list[:i:i], list[i+1:]...)
	if len(cu.pending[conv]) == 0 {
		delete(cu.pending, conv)
	}
}

// cursorReply puts the Claude Code adapter's answer into Cursor's fields.
func cursorReply(event string, out ccOutput) cursorOutput {
	var r cursorOutput
	switch event {
	case cuBeforeShell, cuBeforeMCP, cuBeforeReadFile, cuPreToolUse:
		spec := out.HookSpecificOutput
		if spec == nil {
			return r // no opinion: Cursor's own flow
		}
		reason := spec.PermissionDecisionReason
		switch {
		case spec.PermissionDecision == "deny":
			r.Permission = "deny"
		case spec.UpdatedInput != nil:
			b, _ := json.Marshal(spec.UpdatedInput)
			r.Permission = "deny"
			reason = "the policy would run this call with other arguments, which Cursor cannot do, so it is denied: " + string(b)
		case spec.PermissionDecision == "ask" && event == cuBeforeReadFile:
			r.Permission = "deny" // beforeReadFile only allows or denies
		case spec.PermissionDecision == "ask" || spec.PermissionDecision == "allow":
			r.Permission = spec.PermissionDecision
		}
		if reason != "" {
			r.UserMessage, r.AgentMessage = reason, reason
		}
	case cuBeforeSubmitPrompt:
		t := out.Continue == nil || *out.Continue
		r.Continue = &t
		if !t {
			r.UserMessage = out.StopReason
		}
	case cuStop:
		if out.Decision == "block" {
			r.FollowupMessage = out.Reason
		}
	}
	return r
}
