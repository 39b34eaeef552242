package agentsettings

import (
	"strings"
	"testing"
)

// A hook at this machine's sidecar written with another spelling of the
// loopback host (127.1, localhost., [::1], 0x7f.0.0.1) is awaken-lua's:
// install replaces it rather than adding a second, uninstall takes it out.
func TestLoopbackSpellingsAreOurs(t *testing.T) {
	for _, host := range []string{"127.1", "localhost.", "LOCALHOST", "127.0.1", "2130706433", "0x7f.0.0.1", "[::1]"} {
		t.Run(host, func(t *testing.T) {
			dir := t.TempDir()
			p := writeSettings(t, dir, `{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "http", "url": "http://`+host+`:7878/v1/hooks/claude-code"}]}]}}`)
			o := opts(dir)
			o.Uninstall = true
			res, err := InstallClaudeCode(o)
			if err != nil || res.Removed != 1 {
				t.Fatalf("uninstall: %+v %v\n%s", res, err, readFile(t, p))
			}
		})
	}
	// Not this machine: the user's.
	for _, host := range []string{"127.1.example.com", "localhost.example.com", "10.0.0.1", "1.2.3.4.5"} {
		dir := t.TempDir()
		p := writeSettings(t, dir, `{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "http", "url": "http://`+host+`:7878/v1/hooks/claude-code"}]}]}}`)
		o := opts(dir)
		o.Uninstall = true
		if res, err := InstallClaudeCode(o); err != nil || res.Removed != 0 || !strings.Contains(readFile(t, p), host) {
			t.Fatalf("%s: %+v %v", host, res, err)
		}
	}
}
