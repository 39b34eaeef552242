//go:build unix

package main

import (
	"flag"
	"os"
	"strings"
	"syscall"
	"testing"
)

// A run whose journal records could not be written (a full disk; here the
// file size limit, RLIMIT_FSIZE, which its start record passes) says so: run's log is quiet unless asked,
// so the writer's own report of the loss reached nobody, and the run's
// decisions were missing from the journal without a word.
//
// The limit is the process's: no test of this package is parallel, so no
// other test writes a file meanwhile, and the limit is restored before the
// test ends (and by Cleanup if it fails).
func TestRunSaysWhenTheJournalLostRecords(t *testing.T) {
	_, cfg := journalProject(t)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	restore := func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(restore)
	// Past what the test binary's own log (go test's -test.testlogfile)
	// holds, so that it goes on writing; short of the run's start record,
	// which carries the prompt.
	var logSize int64
	if f := flag.Lookup("test.testlogfile"); f != nil && f.Value.String() != "" {
		if st, err := os.Stat(f.Value.String()); err == nil {
			logSize = st.Size()
		}
	}
	lim := old
	lim.Cur = uint64(logSize + 1<<20)
	if lim.Cur > lim.Max {
		t.Skip("the file size limit is too low to run this test")
	}
	prompt := "read both " + strings.Repeat("x", int(lim.Cur))
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip(err)
	}
	code, out, errOut := awaken(t, "", "--config", cfg, "run", prompt)
	restore()
	if code != exitOK || !strings.Contains(out, "both read") {
		t.Fatalf("run: exit %d: %.2000s\n%.2000s", code, out, errOut)
	}
	if !strings.Contains(errOut, "warning: the journal did not record") || !strings.Contains(errOut, "records lost") {
		t.Fatalf("run lost its journal records without a word: stderr %.2000q", errOut)
	}
}
