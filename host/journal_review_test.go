package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
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

// A reload that moves the journal hands the records made meanwhile to the
// new writer: none is given to the old one after it closed, which would
// count it lost, so every record made across reloads is in one journal or
// the other.
func TestJournalReloadLosesNoRecord(t *testing.T) {
	toml := func(path string) string { return "[journal]\npath = \"" + path + "\"\n" + agentToml }
	dir := project(t, toml("j0"), map[string]string{"guard.lua": guardLua})
	write(t, filepath.Join(dir, "script.toml"), listScript)
	h := open(t, dir, host.Options{})
	stop := make(chan struct{})
	sent := make(chan int)
	for g := 0; g < 4; g++ {
		go func() {
			n := 0
			for {
				select {
				case <-stop:
					sent <- n
					return
				default:
				}
				h.Journal().Record(&journal.Record{Rec: journal.KindEnd, RunID: "r", Termination: "natural"})
				n++
			}
		}()
	}
	const reloads = 10
	for i := 1; i <= reloads; i++ {
		write(t, filepath.Join(dir, "awaken.toml"), toml("j"+strconv.Itoa(i%2)))
		if st := h.Reload(context.Background()); st.LastResult != "loaded" {
			close(stop)
			t.Fatalf("reload %d: %+v", i, st)
		}
	}
	close(stop)
	total := 0
	for g := 0; g < 4; g++ {
		total += <-sent
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, j := range []string{"j0", "j1"} {
		if _, err := journal.Read([]string{filepath.Join(dir, j)}, func(journal.Pos, *journal.Record) error { read++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if lost := h.JournalLost(); lost != 0 || read != total {
		t.Fatalf("%d records made across %d reloads, %d in the journals, %d counted lost", total, reloads, read, lost)
	}
}
