package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/host"
)

// A reload that fails keeps the audit file and the journal of the
// generation that stays current: its runs go on writing their records
// there, whether the new audit file or the new journal could not be
// opened.
func TestFailedReloadKeepsTheAuditFile(t *testing.T) {
	const plugin = `local awaken = require("awaken")
local p = awaken.plugin { id = "aud" }
p:on("run_start", function(ctx) ctx:emit("runtime.audit", { event = "start" }) end)
return p
`
	base := "[model]\nscript = \"script.toml\"\n[agents.default]\ntools = []\n"
	dir := project(t, "[audit]\npath = \"a1.jsonl\"\n"+base, map[string]string{"aud.lua": plugin})
	write(t, filepath.Join(dir, "script.toml"), "[[turns]]\ntext = \"done\"\n")
	write(t, filepath.Join(dir, "blocker"), "a file where a directory would have to be\n")
	h, err := host.Open(context.Background(), host.Options{ConfigPath: filepath.Join(dir, "awaken.toml")})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	lines := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.Count(string(b), "\n")
	}
	runResult(t, h)
	if n := lines("a1.jsonl"); n != 1 {
		t.Fatalf("a1.jsonl has %d records, want 1", n)
	}
	for i, toml := range []string{
		"[audit]\npath = \"blocker/a2.jsonl\"\n" + base,                          // the audit file cannot be opened
		"[audit]\npath = \"a3.jsonl\"\n[journal]\npath = \"blocker/j\"\n" + base, // the journal cannot
	} {
		write(t, filepath.Join(dir, "awaken.toml"), toml)
		if st := h.Reload(context.Background()); st.LastResult == "loaded" {
			t.Fatalf("reload %d loaded: %+v", i, st)
		}
		runResult(t, h)
		if n := lines("a1.jsonl"); n != i+2 {
			t.Fatalf("after failed reload %d, a1.jsonl has %d records, want %d", i, n, i+2)
		}
	}
	if n := lines("a3.jsonl"); n != 0 {
		t.Fatalf("a3.jsonl, of a reload that failed, has %d records", n)
	}
}
