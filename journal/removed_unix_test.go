//go:build unix

package journal

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

// removedWhileRead writes a run over four journal files (one record
// each) and makes the first a named pipe that, once a reader opens it,
// removes the second before handing over its lines: the journal's
// age-out removing a file after a reader listed it but before it read it.
func removedWhileRead(t *testing.T) (dir, removed string) {
	t.Helper()
	dir = t.TempDir()
	files := write(t, Options{Dir: dir, MaxFileSize: 1},
		&Record{Rec: KindRun, Format: Format, RunID: "r1"},
		&Record{Rec: KindPhase, RunID: "r1", Phase: StepStart, Step: 1},
		&Record{Rec: KindPhase, RunID: "r1", Phase: StepEnd, Step: 1},
		&Record{Rec: KindEnd, RunID: "r1", Termination: "natural"})
	if len(files) != 4 {
		t.Fatalf("files %v, want 4", files)
	}
	first, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(files[0], 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(files[0], os.O_WRONLY, 0) // until the reader opens it
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		if err := os.Remove(files[1]); err != nil {
			done <- err
			return
		}
		_, err = f.Write(first)
		done <- err
	}()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return dir, files[1]
}

// A journal file removed after replay listed it and before it read it
// (the journal's age-out) is a lost file, not an error that stops the
// reader: the runs in flight across it are left out from there on.
func TestReadFileRemovedWhileReading(t *testing.T) {
	dir, removed := removedWhileRead(t)
	var got []string
	problems, err := Read([]string{dir}, func(_ Pos, r *Record) error {
		got = append(got, r.Rec+":"+r.Phase)
		return nil
	})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if g := strings.Join(got, " "); g != "run:" {
		t.Errorf("read %q, want r1 up to the removed file", g)
	}
	if len(problems) != 2 || problems[0].File != removed || !strings.Contains(problems[0].Msg, "removed") || problems[1].RunID != "r1" {
		t.Errorf("problems %v, want the removed file and r1 left out", problems)
	}
}

// journal verify counts a file removed while it read as a problem, not
// an error.
func TestVerifyFileRemovedWhileReading(t *testing.T) {
	dir, removed := removedWhileRead(t)
	n, problems, err := Verify([]string{dir})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if n != 3 || len(problems) != 1 || problems[0].File != removed {
		t.Errorf("verified %d lines, problems %v; want 3 and the removed file", n, problems)
	}
}
