package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// journal export -o FILE that fails (an unknown run, a run that did not
// end) leaves FILE as it was: it used to create (truncate) the file before
// reading the journal, so a failed export emptied an existing test, or left
// an empty *_test.lua that awaken-lua test then loaded.
func TestExportFailureKeepsTheOutputFile(t *testing.T) {
	dir, cfg := journalProject(t)
	record(t, cfg, "read both")
	for _, tc := range []struct {
		name     string
		existing *string // nil: the file does not exist
	}{
		{"an existing test", ptr("-- my regression test\n")},
		{"a new file", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "scripts", strings.ReplaceAll(tc.name, " ", "_")+"_test.lua")
			if tc.existing != nil {
				if err := os.WriteFile(out, []byte(*tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, stdout, errOut := awaken(t, "", "--config", cfg, "journal", "export", "run_0000000000000000", "-o", out)
			if code != exitUsage || stdout != "" || !strings.Contains(errOut, "journal_invalid: run run_0000000000000000 has no header") {
				t.Fatalf("export of an unknown run: exit %d, stdout %q, stderr %q", code, stdout, errOut)
			}
			b, err := os.ReadFile(out)
			switch {
			case tc.existing == nil && !os.IsNotExist(err):
				t.Fatalf("a failed export left %s (%q, %v)", out, b, err)
			case tc.existing != nil && string(b) != *tc.existing:
				t.Fatalf("a failed export changed %s to %q (%v)", out, b, err)
			}
			ents, _ := os.ReadDir(filepath.Dir(out))
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") {
					t.Fatalf("a failed export left %s behind", e.Name())
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
