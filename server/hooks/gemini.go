package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
)

// The Gemini CLI adapter (POST /v1/hooks/gemini) translates Gemini CLI's
// hook events into the Claude Code events that mean the same, has the
// Claude Code adapter decide them, and answers Gemini's reply
// (server/README.md, "Gemini CLI"). Gemini's built-in tools are decided
// under Claude Code's names (run_shell_command is Bash, read_file Read,
// ...), so the same rules apply. Gemini cannot ask a person from a hook:
// an ask is a deny that says so. An output a result transform changed
// (redaction) is AfterTool's deny, whose reason Gemini gives the model in
// place of the output.

// geminiInput is a Gemini CLI hook event (the fields the adapter reads).
type geminiInput struct {
	SessionID      string         `json:"session_id"`
	TranscriptPath string         `json:"transcript_path"`
	Cwd            string         `json:"cwd"`
	HookEventName  string         `json:"hook_event_name"`
	ToolName       string         `json:"tool_name"`
	ToolInput      map[string]any `json:"tool_input"`
	ToolResponse   any            `json:"tool_response"`
	Prompt         string         `json:"prompt"`
	PromptResponse string         `json:"prompt_response"`
	StopHookActive bool           `json:"stop_hook_active"`
	Source         string         `json:"source"`
	Reason         string         `json:"reason"`
	// MCPContext names an MCP tool's server and the tool's own name
	// (Gemini's tool_name is mcp_<server>_<tool>, or server__tool).
	MCPContext *geminiMCP `json:"mcp_context"`
}

type geminiMCP struct {
	ServerName string `json:"server_name"`
	ToolName   string `json:"tool_name"`
}

// geminiOutput is a Gemini CLI hook reply.
type geminiOutput struct {
	Decision           string          `json:"decision,omitempty"`
	Reason             string          `json:"reason,omitempty"`
	Continue           *bool           `json:"continue,omitempty"`
	StopReason         string          `json:"stopReason,omitempty"`
	HookSpecificOutput *geminiSpecific `json:"hookSpecificOutput,omitempty"`
}

type geminiSpecific struct {
	HookEventName     string         `json:"hookEventName"`
	AdditionalContext string         `json:"additionalContext,omitempty"`
	ToolInput         map[string]any `json:"tool_input,omitempty"`
}

// geminiTools maps Gemini CLI's built-in tools to Claude Code's, with
// their arguments renamed, so Bash(rm *), Read(./.env) and the like apply.
var geminiTools = map[string]agentTool{
	"run_shell_command": {"Bash", map[string]string{"command": "command"}},
	"read_file":         {"Read", map[string]string{"absolute_path": "file_path", "file_path": "file_path"}},
	"read_many_files":   {"Read", map[string]string{}},
	"write_file":        {"Write", map[string]string{"file_path": "file_path", "content": "content"}},
	"replace":           {"Edit", map[string]string{"file_path": "file_path", "old_string": "old_string", "new_string": "new_string"}},
	// Gemini names the directory a search runs in dir_path (path in
	// earlier versions); grep_search is search_file_content's current name.
	"glob": {"Glob", map[string]string{"pattern": "pattern", "path": "path", "dir_path": "path"}},
	// list_directory lists one directory: a Glob of it, for Read rules.
	"list_directory":      {"Glob", map[string]string{"path": "path", "dir_path": "path"}},
	"grep_search":         {"Grep", map[string]string{"pattern": "pattern", "path": "path", "dir_path": "path"}},
	"search_file_content": {"Grep", map[string]string{"pattern": "pattern", "path": "path", "dir_path": "path"}},
	"web_fetch":           {"WebFetch", map[string]string{"url": "url", "prompt": "prompt"}},
	"google_web_search":   {"WebSearch", map[string]string{"query": "query"}},
}

var geminiToolPrefix = regexp.MustCompile(`"hook_event_name"\s*:\s*"BeforeTool"`)

func (cc *claudeCode) handleGemini(w http.ResponseWriter, r *http.Request) error {
	return serveHook(&cc.o, w, r, cc.geminiProto)
}

// geminiEvent names a Gemini CLI event for its failure reply: BeforeTool
// whenever the body says so.
func geminiEvent(_ *http.Request, in *geminiInput, body []byte) string {
	if geminiToolPrefix.Match(body) {
		return "BeforeTool"
	}
	if in == nil {
		return ""
	}
	return in.HookEventName
}

func (cc *claudeCode) geminiFailure(event string, err error) geminiOutput {
	reason := cc.failClosed("Gemini CLI", event, err)
	if event == "BeforeTool" {
		return geminiOutput{Decision: "deny", Reason: reason}
	}
	return geminiOutput{}
}

func (cc *claudeCode) gemini(ctx context.Context, in geminiInput, agent string) geminiOutput {
	c := ccInput{SessionID: in.SessionID, TranscriptPath: in.TranscriptPath, Cwd: in.Cwd}
	var renames map[string]string
	switch in.HookEventName {
	case "SessionStart":
		c.HookEventName, c.Source = evSessionStart, in.Source
	case "SessionEnd":
		c.HookEventName, c.Reason = evSessionEnd, in.Reason
	case "BeforeAgent":
		c.HookEventName, c.Prompt = evUserPromptSubmit, in.Prompt
	case "AfterAgent":
		c.HookEventName, c.StopHookActive, c.LastAssistantMessage = evStop, in.StopHookActive, in.PromptResponse
	case "BeforeTool", "AfterTool":
		if in.ToolName == "" {
			return cc.geminiFailure(in.HookEventName, errors.New("tool_name must be a non-empty string"))
		}
		c.HookEventName, c.ToolResponse = evPreToolUse, in.ToolResponse
		if in.HookEventName == "AfterTool" {
			c.HookEventName = evPostToolUse
		}
		var err error
		if c.ToolName, c.ToolInput, renames, err = asClaudeCode(geminiTools, in.ToolName, in.ToolInput); err != nil {
			return cc.geminiFailure(in.HookEventName, err)
		}
		if m := in.MCPContext; m != nil {
			// Named as Claude Code names MCP tools, so mcp__server rules
			// apply; a context that does not name both cannot be judged.
			if m.ServerName == "" || m.ToolName == "" {
				return cc.geminiFailure(in.HookEventName, errors.New("mcp_context must name the server_name and tool_name of the MCP tool"))
			}
			c.ToolName = "mcp__" + m.ServerName + "__" + m.ToolName
		}
	default:
		return geminiOutput{} // BeforeModel, Notification, PreCompress, ...: nothing to decide
	}
	out := cc.dispatch(ctx, c, agent)
	return geminiReply(in.HookEventName, out, in.ToolInput, renames)
}

// geminiReply puts the Claude Code adapter's answer into Gemini's fields.
func geminiReply(event string, out ccOutput, orig map[string]any, back map[string]string) geminiOutput {
	var r geminiOutput
	spec := out.HookSpecificOutput
	switch event {
	case "BeforeTool":
		if spec == nil {
			return r
		}
		if reason, ok := spec.denial("Gemini CLI"); ok {
			r.Decision, r.Reason = "deny", reason
		} else if spec.UpdatedInput != nil {
			// Gemini merges tool_input over the model's arguments: an
			// argument the rewrite dropped would stay, so that is denied.
			next := fromClaudeCode(spec.UpdatedInput, back)
			for k := range orig {
				if _, kept := next[k]; !kept {
					return geminiOutput{Decision: "deny", Reason: "the policy rewrote this call without its argument " + k +
						", which Gemini CLI cannot drop, so it is denied"}
				}
			}
			r.Decision = "allow"
			r.HookSpecificOutput = &geminiSpecific{HookEventName: event, ToolInput: next}
		}
		if spec.AdditionalContext != "" && r.Decision != "deny" {
			if r.HookSpecificOutput == nil {
				r.HookSpecificOutput = &geminiSpecific{HookEventName: event}
			}
			r.HookSpecificOutput.AdditionalContext = spec.AdditionalContext
		}
	case "AfterTool":
		if spec != nil && spec.hasOutput {
			// A result transform changed the output (redaction): Gemini
			// replaces what the model reads only with a deny's reason.
			r.Decision, r.Reason = "deny", geminiOutputText(spec.UpdatedToolOutput)
			if spec.AdditionalContext != "" {
				r.Reason += "\n\n" + spec.AdditionalContext // a deny drops additionalContext
			}
			break
		}
		if spec != nil && spec.AdditionalContext != "" {
			r.HookSpecificOutput = &geminiSpecific{HookEventName: event, AdditionalContext: spec.AdditionalContext}
		}
	case "BeforeAgent", "SessionStart":
		if spec != nil && spec.AdditionalContext != "" {
			r.HookSpecificOutput = &geminiSpecific{HookEventName: event, AdditionalContext: spec.AdditionalContext}
		}
	case "AfterAgent":
		if out.Decision == "block" {
			// Gemini's retry: the reason is the agent's next prompt.
			r.Decision, r.Reason = "deny", out.Reason
		}
	}
	if out.Continue != nil && !*out.Continue {
		f := false
		r.Continue, r.StopReason = &f, strings.TrimSpace(out.StopReason)
	}
	return r
}

// geminiOutputText is the text the model reads for a tool output a result
// transform changed: its llmContent when it is text (Gemini's
// tool_response is {llmContent, returnDisplay, error}), else the output as
// JSON.
func geminiOutputText(out any) string {
	if m, ok := out.(map[string]any); ok {
		if s, ok := m["llmContent"].(string); ok {
			out = s
		} else if c, ok := m["llmContent"]; ok {
			out = c
		}
	}
	s, ok := out.(string)
	if !ok {
		b, _ := json.Marshal(out)
		s = string(b)
	}
	if strings.TrimSpace(s) == "" {
		return "awaken-lua withheld this tool's output" // Gemini needs a reason with a deny
	}
	return s
}
