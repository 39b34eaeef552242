//go:build unix

package journal

import (
	"fmt"
	"log/slog"
	"os"
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

// Records the writer loses to a failed write that tore no line (the disk
// filled up at a line's end) or drops while it waits to retry may be
// phases of runs that go on in the new file after the recovery. The new
// file's number skips one, so that a reader sees a file of the writer
// missing there and leaves those runs out rather than drive them on
// without the lost phases: replay used to blame the candidate for them
// (a false "replay failed" flip). A run begun after the recovery is read
// whole. (The limit is the process's; see the test above.)
func TestWriterLossIsAGapForTheReader(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{now: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	w, err := Open(Options{Dir: dir, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(restore)
	poll := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 20s", what)
			}
		}
	}
	w.Record(&Record{Rec: KindRun, Format: Format, RunID: "r1"})
	w.Record(&Record{Rec: KindPhase, RunID: "r1", Phase: StepStart, Step: 1})
	poll("two lines written", func() bool { return wholeLines(t, dir) == 2 })
	files, _ := Files(dir)
	st, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	// The file may not grow: the next write fails with nothing written.
	lim := old
	lim.Cur = uint64(st.Size())
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	w.Record(&Record{Rec: KindPhase, RunID: "r1", Phase: BeforeInference, Step: 1})
	poll("the record lost", func() bool { return w.Lost() == 1 })
	w.Record(&Record{Rec: KindPhase, RunID: "r1", Phase: AfterInference, Step: 1}) // dropped: no retry is due
	poll("the record dropped", func() bool { return w.Lost() == 2 })
	restore()
	clk.add(retryMax)
	w.Record(&Record{Rec: KindPhase, RunID: "r1", Phase: StepEnd, Step: 1})
	w.Record(&Record{Rec: KindEnd, RunID: "r1", Termination: "natural"})
	w.Record(&Record{Rec: KindRun, Format: Format, RunID: "r2"})
	w.Record(&Record{Rec: KindEnd, RunID: "r2", Termination: "natural"})
	w.Close()
	if n := wholeLines(t, dir); n != 6 {
		t.Fatalf("%d lines written, want 6", n)
	}
	recs, problems := readAll(t, dir)
	var got []string
	for _, r := range recs {
		got = append(got, r.RunID+":"+r.Rec)
	}
	if strings.Join(got, " ") != "r1:run r1:phase r2:run r2:end" || len(problems) != 1 || !strings.Contains(problems[0].Msg, "run r1:") {
		t.Fatalf("read %v, problems %v; want r1 left out after its first phase, with a problem, and r2 whole", got, problems)
	}
	if _, _, err := Verify([]string{dir}); err != nil {
		t.Fatalf("verify: %v", err)
	}
}
