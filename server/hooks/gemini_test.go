package hooks

import (
	"reflect"
	"testing"
)

// A rewrite reaches Gemini as tool_input under Gemini's argument names,
// unless it drops an argument, which Gemini's merge would keep: deny.
func TestGeminiRewrite(t *testing.T) {
	name, args, back, _ := asClaudeCode(geminiTools, "read_file", map[string]any{"absolute_path": "/etc/passwd"})
	if name != "Read" || args["file_path"] != "/etc/passwd" {
		t.Fatalf("asClaudeCode: %s %v", name, args)
	}
	out := ccOutput{HookSpecificOutput: &ccSpecific{HookEventName: evPreToolUse, UpdatedInput: map[string]any{"file_path": "/dev/null"}}}
	r := geminiReply("BeforeTool", out, map[string]any{"absolute_path": "/etc/passwd"}, back)
	if r.Decision != "allow" || !reflect.DeepEqual(r.HookSpecificOutput.ToolInput, map[string]any{"absolute_path": "/dev/null"}) {
		t.Fatalf("rewrite: %+v %+v", r, r.HookSpecificOutput)
	}
	_, _, back, _ = asClaudeCode(geminiTools, "run_shell_command", map[string]any{"command": "ls", "description": "list"})
	out.HookSpecificOutput.UpdatedInput = map[string]any{"command": "ls -a"}
	r = geminiReply("BeforeTool", out, map[string]any{"command": "ls", "description": "list"}, back)
	if r.Decision != "deny" {
		t.Fatalf("a rewrite that drops an argument: %+v", r)
	}
}
