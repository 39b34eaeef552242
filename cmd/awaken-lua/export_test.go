package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/journal"
)

// TestExportKeepsABackup: journal export -o over an existing file that
// holds something else keeps the old file as FILE.<time>.bak first and
// says so: -o scripts/policy_test.lua by mistake replaced the user's test
// with no way back. Exporting the same test again makes no backup.
func TestExportKeepsABackup(t *testing.T) {
	dir, cfg := journalProject(t)
	record(t, cfg, "read both")
	var runID string
	journal.Read([]string{filepath.Join(dir, "journal")}, func(_ journal.Pos, r *journal.Record) error {
		if r.Rec == journal.KindRun {
			runID = r.RunID
		}
		return nil
	})
	out := filepath.Join(dir, "scripts", "policy_test.lua")
	const mine = "-- my own tests\n"
	if err := os.WriteFile(out, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	backups := func() []string {
		m, _ := filepath.Glob(out + ".*.bak")
		return m
	}
	code, stdout, errOut := awaken(t, "", "--config", cfg, "journal", "export", runID, "-o", out)
	if code != exitOK || stdout != "" {
		t.Fatalf("export: exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	b := backups()
	if len(b) != 1 || !strings.Contains(errOut, "kept the old "+out+" as "+b[0]) {
		t.Fatalf("backups %v, stderr %q", b, errOut)
	}
	if old, _ := os.ReadFile(b[0]); string(old) != mine {
		t.Fatalf("the backup holds %q", old)
	}
	if now, _ := os.ReadFile(out); !strings.Contains(string(now), runID) {
		t.Fatalf("%s holds %q", out, now)
	}
	if code, _, errOut := awaken(t, "", "--config", cfg, "journal", "export", runID, "-o", out); code != exitOK || strings.Contains(errOut, "kept the old") || len(backups()) != 1 {
		t.Fatalf("the same export again: exit %d, stderr %q, backups %v", code, errOut, backups())
	}
}
