package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/journal"
)

// A reload whose [journal] cannot be opened fails and keeps the journal
// the current generation records to: the host used to close the old
// writer before it tried the new one, so the generation it kept recorded
// nothing from then on, silently (not even counted as lost).
func TestFailedJournalReloadKeepsTheJournal(t *testing.T) {
	toml := func(path string) string { return "[journal]\npath = \"" + path + "\"\n" + agentToml }
	dir := project(t, toml("j1"), map[string]string{"guard.lua": guardLua})
	write(t, filepath.Join(dir, "script.toml"), listScript)
	write(t, filepath.Join(dir, "afile"), "not a directory")
	h := open(t, dir, host.Options{})
	records := func() int {
		n := 0
		if _, err := journal.Read([]string{filepath.Join(dir, "j1")}, func(journal.Pos, *journal.Record) error { n++; return nil }); err != nil {
			return -1
		}
		return n
	}
	if got := runList(t, h); got != blocked {
		t.Fatalf("run: %s", got)
	}
	eventually(t, "the first run is journaled in j1", func() bool { return records() >= 3 }, nil)
	before := records()
	for _, bad := range []string{"afile/j2", "afile"} {
		write(t, filepath.Join(dir, "awaken.toml"), toml(bad))
		st := h.Reload(context.Background())
		if st.LastResult != "failed" || !strings.Contains(strings.Join(st.Errors, "\n"), "journal") {
			t.Fatalf("reload to [journal] path = %q: %+v", bad, st)
		}
		if got := runList(t, h); got != blocked {
			t.Fatalf("run after the failed reload: %s", got)
		}
		// The host's writer files its records within milliseconds; poll.
		eventually(t, "the run after the failed reload to "+bad+" is journaled in j1", func() bool { return records() >= before+3 }, nil)
		before = records()
		if n := h.JournalLost(); n != 0 {
			t.Fatalf("%d records lost", n)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "afile")); err != nil {
		t.Fatal(err)
	}
}
