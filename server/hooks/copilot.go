package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// The GitHub Copilot CLI adapter (POST /v1/hooks/copilot?event=NAME)
// translates Copilot CLI's hook events into their Claude Code counterparts
// and answers Copilot's replies (server/README.md, "GitHub Copilot CLI").
// Copilot's input names neither the event nor (in older versions) the
// session: the hook command passes the event (awaken-lua hook --agent
// copilot --event preToolUse), and a session is the working directory
// unless the input carries a sessionId. Copilot's preToolUse allows or
// denies: an ask is a deny that says a person must approve.

// copilotInput is a Copilot CLI hook event (the fields the adapter reads),
// in either of its formats: camelCase (event names such as preToolUse),
// or the VS Code compatible one (PascalCase event names, snake_case
// fields), which Copilot sends to hooks configured under PascalCase names.
type copilotInput struct {
	HookEventName string          `json:"hook_event_name"`
	SessionID     string          `json:"sessionId"`
	Timestamp     any             `json:"timestamp"`
	Cwd           string          `json:"cwd"`
	ToolName      string          `json:"toolName"`
	ToolArgs      json.RawMessage `json:"toolArgs"` // a JSON string of the arguments (or the object)
	ToolResult    any             `json:"toolResult"`
	Prompt        string          `json:"prompt"`
	Source        string          `json:"source"`
	Reason        string          `json:"reason"`
	// The VS Code compatible format's names for the same.
	SessionIDVS    string          `json:"session_id"`
	ToolNameVS     string          `json:"tool_name"`
	ToolInputVS    json.RawMessage `json:"tool_input"`
	ToolResultVS   any             `json:"tool_result"`
	ToolResponseVS any             `json:"tool_response"` // Claude Code's name, for hooks that send it
}

// copilotOutput is a Copilot CLI hook reply. HookSpecificOutput carries
// the same decision for a hook of the VS Code compatible format, which
// reads it where Claude Code does.
type copilotOutput struct {
	PermissionDecision       string         `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string         `json:"permissionDecisionReason,omitempty"`
	ModifiedArgs             map[string]any `json:"modifiedArgs,omitzero"` // a rewrite to {} is sent
	Decision                 string         `json:"decision,omitempty"`
	Reason                   string         `json:"reason,omitempty"`
	HookSpecificOutput       *ccSpecific    `json:"hookSpecificOutput,omitempty"`
}

// copilotVSEvents are the VS Code compatible format's event names, with
// their camelCase names.
var copilotVSEvents = map[string]string{
	"SessionStart": "sessionStart", "SessionEnd": "sessionEnd", "UserPromptSubmit": "userPromptSubmitted",
	"PreToolUse": "preToolUse", "PostToolUse": "postToolUse", "Stop": "agentStop", "SubagentStop": "subagentStop",
	"ErrorOccurred": "errorOccurred",
}

// normalize puts an event of the VS Code compatible format into the
// camelCase one: its event name, and its fields where the camelCase ones
// are empty. It reports whether the event came in that format (by the
// name it was given or the one it gives itself).
func (in *copilotInput) normalize(event string) (string, bool) {
	camel, vs := copilotVSEvents[event]
	if !vs {
		camel = event
		_, vs = copilotVSEvents[in.HookEventName]
	}
	if in.SessionID == "" {
		in.SessionID = in.SessionIDVS
	}
	if in.ToolName == "" {
		in.ToolName = in.ToolNameVS
	}
	if len(in.ToolArgs) == 0 {
		in.ToolArgs = in.ToolInputVS
	}
	if in.ToolResult == nil {
		in.ToolResult = in.ToolResultVS
	}
	if in.ToolResult == nil {
		in.ToolResult = in.ToolResponseVS
	}
	return camel, vs
}

// copilotTools maps Copilot CLI's built-in tools to Claude Code's, with
// their arguments renamed.
var copilotTools = map[string]agentTool{
	"bash": {"Bash", map[string]string{"command": "command"}},
	// write_bash types input into a shell session an async bash call
	// started: what it types runs there as a command.
	"write_bash":  {"Bash", map[string]string{"input": "command"}},
	"view":        {"Read", map[string]string{"path": "file_path"}},
	"create":      {"Write", map[string]string{"path": "file_path", "file_text": "content"}},
	"edit":        {"Edit", map[string]string{"path": "file_path", "old_str": "old_string", "new_str": "new_string"}},
	"str_replace": {"Edit", map[string]string{"path": "file_path", "old_str": "old_string", "new_str": "new_string"}},
	"glob":        {"Glob", map[string]string{"pattern": "pattern"}},
	"grep":        {"Grep", map[string]string{"pattern": "pattern"}},
	"web_fetch":   {"WebFetch", map[string]string{"url": "url"}},
}

func (cc *claudeCode) handleCopilot(w http.ResponseWriter, r *http.Request) error {
	return serveHook(&cc.o, w, r, cc.copilotProto)
}

// copilotEvent names a Copilot CLI event: its command hooks do not send
// the event's name, so ?event= gives it.
func copilotEvent(r *http.Request, in *copilotInput, _ []byte) string {
	if e := query(r, "event"); e != "" || in == nil {
		return e
	}
	return in.HookEventName
}

func (cc *claudeCode) copilotFailure(event string, err error) copilotOutput {
	reason := cc.failClosed("Copilot CLI", event, err)
	switch event {
	case "preToolUse":
		return copilotOutput{PermissionDecision: "deny", PermissionDecisionReason: reason}
	case "PreToolUse":
		return copilotOutput{PermissionDecision: "deny", PermissionDecisionReason: reason}.withVS()
	}
	return copilotOutput{}
}

// withVS gives the decision also where the VS Code compatible format
// reads it (as Claude Code does).
func (o copilotOutput) withVS() copilotOutput {
	o.HookSpecificOutput = &ccSpecific{HookEventName: evPreToolUse, PermissionDecision: o.PermissionDecision,
		PermissionDecisionReason: o.PermissionDecisionReason, UpdatedInput: o.ModifiedArgs}
	return o
}

func (cc *claudeCode) copilot(ctx context.Context, event string, in copilotInput, agent string) copilotOutput {
	event, vs := in.normalize(event)
	fail := func(event string, err error) copilotOutput {
		r := cc.copilotFailure(event, err)
		if vs && r.PermissionDecision != "" {
			return r.withVS() // also where that format reads a decision
		}
		return r
	}
	session := in.SessionID
	if session == "" {
		if in.Cwd == "" {
			return fail(event, errors.New("the event has neither sessionId nor cwd, so it belongs to no session"))
		}
		session = copilotSession(in.Cwd, cc.o.MaxIDLen)
	}
	c := ccInput{SessionID: session, Cwd: in.Cwd}
	var back map[string]string
	switch event {
	case "sessionStart":
		c.HookEventName, c.Source = evSessionStart, in.Source
	case "sessionEnd":
		c.HookEventName, c.Reason = evSessionEnd, in.Reason
	case "userPromptSubmitted":
		c.HookEventName, c.Prompt = evUserPromptSubmit, in.Prompt
	case "agentStop":
		c.HookEventName = evStop
	case "preToolUse", "postToolUse":
		if in.ToolName == "" {
			return fail(event, errors.New("toolName must be a non-empty string"))
		}
		args, err := copilotArgs(in.ToolArgs)
		if err != nil {
			return fail(event, err)
		}
		c.HookEventName = evPreToolUse
		if event == "postToolUse" {
			c.HookEventName, c.ToolResponse = evPostToolUse, in.ToolResult
		}
		if c.ToolName, c.ToolInput, back, err = asClaudeCode(copilotTools, in.ToolName, args); err != nil {
			return fail(event, err)
		}
	case "":
		return fail("preToolUse", errors.New("the event is not named: call /v1/hooks/copilot?event=NAME (awaken-lua hook --agent copilot --event NAME)"))
	default:
		return copilotOutput{} // errorOccurred, subagentStop, ...: nothing to decide
	}
	out := cc.dispatch(ctx, c, agent)
	r := copilotReply(event, out, back)
	if vs && event == "preToolUse" && r.PermissionDecision != "" {
		return r.withVS()
	}
	return r
}

// copilotSession is the session of a Copilot CLI event without a session
// id: its working directory's, within maxLen bytes (a deep directory's is
// named by its hash instead).
func copilotSession(cwd string, maxLen int) string {
	if s := "copilot:" + cwd; len(s) <= maxLen {
		return s
	}
	sum := sha256.Sum256([]byte(cwd))
	return "copilot:sha256:" + hex.EncodeToString(sum[:])
}

// copilotArgs decodes toolArgs: a JSON string of an object, or the object.
func copilotArgs(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if len(raw) == 0 || string(raw) == "null" {
		return args, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = []byte(s)
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf("toolArgs is not a JSON object: %v", err)
	}
	return args, nil
}

func copilotReply(event string, out ccOutput, back map[string]string) copilotOutput {
	var r copilotOutput
	switch event {
	case "preToolUse":
		spec := out.HookSpecificOutput
		if spec == nil {
			return r
		}
		if reason, ok := spec.denial("Copilot CLI"); ok {
			r.PermissionDecision, r.PermissionDecisionReason = "deny", reason
		} else if spec.UpdatedInput != nil {
			r.PermissionDecision, r.ModifiedArgs = "allow", fromClaudeCode(spec.UpdatedInput, back)
		}
	case "agentStop":
		if out.Decision == "block" {
			r.Decision, r.Reason = "block", out.Reason
		}
	}
	return r
}
