package agentsettings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Gemini CLI runs no hook while hooks.enabled is false: an install into
// such a file leaves the user's switch alone but says so, since the
// policy would otherwise silently not apply.
func TestInstallGeminiWarnsWhenHooksAreOff(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		warn       string // a part of the warning, "" for none about the switch
	}{
		{"switched off", `{"hooks": {"enabled": false}}`, "hooks.enabled is false"},
		{"switched on", `{"hooks": {"enabled": true}}`, ""},
		{"no switch", `{}`, "hooks.enabled is now true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, ".gemini", "settings.json")
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(tc.file+"\n"), 0o644)
			res, err := InstallGemini(Options{ProjectDir: dir})
			if err != nil || res.Added != len(GeminiEvents) {
				t.Fatalf("install: %+v %v", res, err)
			}
			all := strings.Join(res.Warnings, "\n")
			if tc.warn == "" {
				if strings.Contains(all, "hooks.enabled") {
					t.Fatalf("unexpected warning: %s", all)
				}
				return
			}
			if !strings.Contains(all, tc.warn) {
				t.Fatalf("warnings %q, want one that says %q", all, tc.warn)
			}
			b, _ := os.ReadFile(p)
			if tc.name == "switched off" && !strings.Contains(string(b), `"enabled":false`) {
				t.Fatalf("the user's switch changed:\n%s", b)
			}
		})
	}
}
