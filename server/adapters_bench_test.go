package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// BenchmarkHookAdapters is one PreToolUse-equivalent decision per
// iteration (a fresh Bash call, ls <dir>, on one session of the reference
// policy) through each agent's endpoint, served in process: what each
// adapter's translation adds to Claude Code's (target: at most 10%).
func BenchmarkHookAdapters(b *testing.B) {
	for _, agent := range []string{"claude-code", "codex", "cursor", "gemini", "copilot"} {
		b.Run(agent, func(b *testing.B) {
			sc := newSidecar(b, filepath.Join("..", "testdata", "agents", "claude-code", "policy"), Options{Log: quietLog()})
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := fmt.Sprintf("ls dir%d", i)
				path := "/v1/hooks/" + agent
				var body map[string]any
				switch agent {
				case "claude-code":
					body = map[string]any{"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
						"tool_input": map[string]any{"command": cmd}, "tool_use_id": fmt.Sprint("t", i)}
				case "codex":
					body = map[string]any{"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "shell", "turn_id": "1",
						"tool_input": map[string]any{"command": []any{"bash", "-lc", cmd}}, "tool_use_id": fmt.Sprint("t", i)}
				case "cursor":
					body = map[string]any{"conversation_id": "s", "generation_id": "g", "hook_event_name": "beforeShellExecution", "command": cmd, "cwd": "/w"}
				case "gemini":
					body = map[string]any{"session_id": "s", "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
						"tool_input": map[string]any{"command": cmd}}
				case "copilot":
					args, _ := json.Marshal(map[string]any{"command": cmd})
					body = map[string]any{"sessionId": "s", "cwd": "/w", "toolName": "bash", "toolArgs": string(args)}
					path += "?event=preToolUse"
				}
				raw, _ := json.Marshal(body)
				req := httptest.NewRequest("POST", "http://127.0.0.1"+path, bytes.NewReader(raw))
				req.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				sc.srv.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("%s: %d %s", agent, w.Code, w.Body)
				}
			}
		})
	}
}
