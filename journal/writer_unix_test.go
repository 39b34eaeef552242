//go:build unix

package journal

import (
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A write error (a full disk, here the file size limit, RLIMIT_FSIZE)
// does not end the journal for the rest of the process: the failed buffer
// is dropped, the records that did not reach the file whole are counted
// (Lost, the log, Close's error), and once the retry is due the writer
// starts a new file, which starts clean (its own chain), so records made
// after the disk recovered are written. The line the error tore stays the
// last line of its file, which the reader skips as incomplete.
//
// The limit is the process's: the test is not parallel, and Go runs a
// package's parallel tests only after its sequential ones, so no other
// test writes a file meanwhile; the limit is restored before the test
// ends (and by Cleanup if it fails).
func TestWriterRecoversAfterAWriteError(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{now: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	var logs logBuffer
	w, err := Open(Options{Dir: dir, Now: clk.Now, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
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
	lim := old
	lim.Cur = 256 << 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip(err)
	}
	pad := strings.Repeat("p", 4096)
	const before = 201
	w.Record(&Record{Rec: KindRun, Format: Format, RunID: "before"})
	for i := 0; i < before-1; i++ { // ~800 KiB: past the limit
		w.Record(&Record{Rec: KindPhase, RunID: "before", Phase: StepStart, Step: i + 1, Input: &Input{Reason: pad}})
	}
	// Every record is written whole or lost: the clock stands still, so
	// no retry is due and the records after the error are dropped.
	deadline := time.Now().Add(20 * time.Second)
	for int64(wholeLines(t, dir))+w.Lost() != before {
		if time.Now().After(deadline) {
			t.Fatalf("%d lines written, %d lost, want %d in all", wholeLines(t, dir), w.Lost(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	written := wholeLines(t, dir)
	if written == 0 || w.Lost() == 0 {
		t.Fatalf("%d lines written, %d lost: the limit did not stop the writer", written, w.Lost())
	}
	restore()
	clk.add(retryMax)
	w.Record(&Record{Rec: KindRun, Format: Format, RunID: "after"})
	w.Record(&Record{Rec: KindEnd, RunID: "after", Termination: "natural"})
	cerr := w.Close()
	lost := int64(before - written)
	if w.Lost() != lost || cerr == nil || !strings.Contains(cerr.Error(), fmt.Sprintf("(%d records lost)", lost)) {
		t.Errorf("Lost = %d, Close = %v; want %d lost", w.Lost(), cerr, lost)
	}
	files, _ := Files(dir)
	if len(files) != 2 {
		t.Fatalf("files %v, want the failed one and a new one", files)
	}
	recs, problems := readAll(t, dir)
	var after []string
	for _, r := range recs {
		if r.RunID == "after" {
			after = append(after, r.Rec)
		}
	}
	if len(recs) != written+2 || strings.Join(after, ",") != "run,end" {
		t.Fatalf("read %d records (%v of the run after the recovery), want %d", len(recs), after, written+2)
	}
	for _, p := range problems {
		if p.File != files[0] || p.Line != written+1 || !strings.Contains(p.Msg, "incomplete") {
			t.Errorf("problem %v, want only the torn last line of %s", p, files[0])
		}
	}
	if _, _, err := Verify(files); err != nil {
		t.Fatalf("verify: %v", err)
	}
	l := logs.String()
	if strings.Count(l, "cannot write") != 1 || !strings.Contains(l, "writes again") || !strings.Contains(l, fmt.Sprintf("lost=%d", lost)) {
		t.Errorf("log:\n%s", l)
	}
}
