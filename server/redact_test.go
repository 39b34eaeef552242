package server

import (
	"fmt"
	"testing"
)

// The standard redact plugin masks a password in what a Bash call printed
// before Claude reads it, whichever way the value is written, also a
// quoted value whose line does not close the quote (grep -o
// 'PASSWORD="[^"]*' prints the value without it); the rest of the output
// stays as it was.
func TestClaudeCodeStdlibRedactsPasswords(t *testing.T) {
	sc := newSidecar(t, project(t, "\n[plugins.redact]\n", map[string]string{"noop.lua": `return require("awaken").plugin {}`}), Options{Log: quietLog()})
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": "pw"}), "")
	for i, tc := range []struct{ stdout, want string }{
		{"password=s3cret\nnext", "password=[REDACTED]\nnext"},
		{`DB_PASSWORD="two words"` + "\nnext", `DB_PASSWORD="[REDACTED]"` + "\nnext"},
		{`.env:PASSWORD="s3cret` + "\n" + `.env.prod:PASSWORD="pr0d`, `.env:PASSWORD="[REDACTED]` + "\n" + `.env.prod:PASSWORD="[REDACTED]`},
		{`password='s3cret` + "\r\nnext", `password='[REDACTED]` + "\r\nnext"},
		{`log("password: " + name)` + "\nnext", ""}, // code, not a value: unchanged
		{`fmt.Println("password: "+pw)` + "\nnext", ""},
	} {
		t.Run(tc.stdout, func(t *testing.T) {
			id := fmt.Sprintf("toolu_PW%d", i)
			ev := map[string]any{"session_id": "pw", "tool_use_id": id, "tool_input": map[string]any{"command": "grep -o password .env"}}
			if out := sc.hook(t, fixture(t, "pre_tool_use_bash_ls", ev), ""); len(out) != 0 {
				t.Fatalf("PreToolUse: %s", mustJSON(out))
			}
			p := fixture(t, "post_tool_use_bash_ls", ev)
			p["tool_response"] = map[string]any{"stdout": tc.stdout, "stderr": "", "interrupted": false, "isImage": false}
			s := specific(sc.hook(t, p, ""))
			if tc.want == "" {
				if s != nil && s["updatedToolOutput"] != nil {
					t.Fatalf("want the output unchanged, got %s", mustJSON(s))
				}
				return
			}
			var got any
			if s != nil {
				if o, ok := s["updatedToolOutput"].(map[string]any); ok {
					got = o["stdout"]
				}
			}
			if got != tc.want {
				t.Fatalf("Claude reads stdout %q, want %q (reply %s)", got, tc.want, mustJSON(s))
			}
		})
	}
}
