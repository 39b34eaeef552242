package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/model"
)

// logBuffer is a log the writer's goroutine writes and a test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The writer never writes a line the reader refuses (maxLine: control
// characters escape to six bytes each, so ~11 MB of them is enough to pass
// it). Such a record is written without its input, listed in "omitted";
// one still too long without it keeps only its identity; one too long
// even so (its run id) is not written, and counted. Each is logged once.
// The journal stays readable and verifiable, every record after them
// included.
func TestWriterNeverWritesALineTheReaderRefuses(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("\x01", maxLine/6+1024)
	recs := []*Record{
		{Rec: KindRun, Format: Format, RunID: "big"},
		{Rec: KindPhase, RunID: "big", Phase: RunStart, Input: &Input{Messages: []model.Message{{Role: "user", Content: big}}}},
		{Rec: KindPhase, RunID: "big", Phase: ToolGate, Step: 1, Input: &Input{Call: &model.ToolCall{ID: "c", Name: "shell"}},
			Decisions: []Decision{{CallID: "c", Tool: "shell", Decision: gate.Block, Reason: big}}, Termination: "blocked"},
		{Rec: KindPhase, RunID: big, Phase: StepEnd},
		{Rec: KindEnd, RunID: "big", Termination: "blocked"},
		{Rec: KindRun, Format: Format, RunID: "small"},
		{Rec: KindEnd, RunID: "small", Termination: "natural"},
	}
	var logs logBuffer
	w, err := Open(Options{Dir: dir, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		w.Record(r)
	}
	recs, big = nil, ""
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("Close = %v, want the record not written", err)
	}
	if w.Lost() != 1 {
		t.Errorf("Lost = %d, want 1", w.Lost())
	}
	files, _ := Files(dir)
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for i, line := range bytes.SplitAfter(b, []byte("\n")) {
			if len(line) > maxLine {
				t.Errorf("%s:%d: %d bytes, more than a reader takes", f, i+1, len(line))
			}
		}
	}
	got, problems := readAll(t, dir)
	var names []string
	for _, r := range got {
		names = append(names, r.Rec+":"+r.RunID+":"+r.Phase+":"+strings.Join(r.Omitted, ","))
	}
	want := "run:big:: phase:big:run_start:input phase:big:tool_gate:input,decisions end:big:: run:small:: end:small::"
	if strings.Join(names, " ") != want || len(problems) != 0 {
		t.Fatalf("read %s, problems %v\nwant %s", strings.Join(names, " "), problems, want)
	}
	if in := got[1].Input; in != nil {
		t.Errorf("the shortened run_start kept its input: %d messages", len(in.Messages))
	}
	if g := got[2]; g.Step != 1 || g.Termination != "blocked" || len(g.Decisions) != 0 {
		t.Errorf("the record shortened to its identity: %+v", g)
	}
	if n, problems, err := Verify(files); err != nil || n != 6 || len(problems) != 0 {
		t.Fatalf("verify: %d %v %v", n, problems, err)
	}
	if l := logs.String(); strings.Count(l, "written without the fields") != 2 || strings.Count(l, "was not written") != 1 {
		t.Errorf("log:\n%s", l)
	}
}

// The writer's bound is the reader's, to the byte: a record whose line is
// as long as a reader takes is written whole, one a byte longer is
// shortened.
func TestWriterBoundIsTheReadersToTheByte(t *testing.T) {
	dir := t.TempDir()
	rec := func(reason string) *Record {
		return &Record{Rec: KindPhase, RunID: "r", Phase: Cancel, Input: &Input{Reason: reason}}
	}
	fit := maxBody - (len(appendRecord(nil, rec("x"))) - 1)
	files := write(t, Options{Dir: dir}, &Record{Rec: KindRun, Format: Format, RunID: "r"},
		rec(strings.Repeat("x", fit)), rec(strings.Repeat("x", fit+1)))
	b, _ := os.ReadFile(files[0])
	if lines := bytes.SplitAfter(b, []byte("\n")); len(lines[1]) != maxLine {
		t.Fatalf("the line that fits is %d bytes, want %d", len(lines[1]), maxLine)
	}
	got, problems := readAll(t, dir)
	if len(got) != 3 || len(problems) != 0 || len(got[1].Input.Reason) != fit || got[1].Omitted != nil ||
		got[2].Input != nil || strings.Join(got[2].Omitted, ",") != "input" {
		t.Fatalf("read %d records, problems %v", len(got), problems)
	}
}

// clock is a writer's Options.Now that a test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// wholeLines counts the lines of the journal files that end in a newline.
func wholeLines(t *testing.T, dir string) int {
	t.Helper()
	files, _ := Files(dir)
	n := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		n += bytes.Count(b, []byte("\n"))
	}
	return n
}

// sinkFunc is a LineSink that keeps the lines it takes, and refuses
// batches while fail is set.
type sinkFunc struct {
	mu    sync.Mutex
	fail  bool
	lines []Line
	n     map[string]int
}

func (s *sinkFunc) WriteLines(_ context.Context, stream string, lines [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("the database is down")
	}
	if s.n == nil {
		s.n = map[string]int{}
	}
	for _, l := range lines {
		s.n[stream]++
		s.lines = append(s.lines, Line{Stream: stream, N: s.n[stream], Data: l})
	}
	return nil
}

func (s *sinkFunc) AgeOut(context.Context, time.Time) error { return nil }

func (s *sinkFunc) set(fail bool) {
	s.mu.Lock()
	s.fail = fail
	s.mu.Unlock()
}

// A batch the sink refuses is counted lost, and the writer goes on with
// a stream of its own once the retry is due, so that every stream's chain
// holds (no line names one that was never stored) and records made after
// the sink recovered are stored.
func TestWriterRecoversAfterASinkError(t *testing.T) {
	clk := &clock{now: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	sink := &sinkFunc{}
	w, err := Open(Options{Sink: sink, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	settle := func(want int64) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			sink.mu.Lock()
			n := int64(len(sink.lines))
			sink.mu.Unlock()
			if n+w.Lost() == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d lines stored, %d lost, want %d in all", n, w.Lost(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	w.Record(&Record{Rec: KindRun, Format: Format, RunID: "r1"})
	settle(1)
	sink.set(true)
	w.Record(&Record{Rec: KindEnd, RunID: "r1"})
	settle(2)
	sink.set(false)
	clk.add(retryMax)
	w.Record(&Record{Rec: KindRun, Format: Format, RunID: "r2"})
	w.Record(&Record{Rec: KindEnd, RunID: "r2"})
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "(1 records lost)") {
		t.Errorf("Close = %v", err)
	}
	if len(sink.lines) != 4 {
		t.Fatalf("stored %d lines, want r1's header, the marker of r1's lost end and r2's two", len(sink.lines))
	}
	if sink.lines[1].Stream == sink.lines[0].Stream {
		t.Fatal("the lines after the error went on in the stream whose chain names the lost line")
	}
	var marker Record
	if err := json.Unmarshal(sink.lines[1].Data, &marker); err != nil || marker.Rec != KindLost ||
		!reflect.DeepEqual(marker.Lost, []LostRun{{RunID: "r1", Rec: KindEnd}}) {
		t.Fatalf("the new stream starts with %s, want a marker naming r1's end (%v)", sink.lines[1].Data, err)
	}
	each := func(yield func(Line) error) error {
		for _, l := range sink.lines {
			if err := yield(l); err != nil {
				return err
			}
		}
		return nil
	}
	if n, err := VerifyLines(each); err != nil || n != 4 {
		t.Fatalf("verify: %d %v", n, err)
	}
}

// A record given to a closed writer (a reload moved the journal under a
// run that was recording) is counted as lost, not dropped unseen.
func TestRecordAfterCloseIsCountedLost(t *testing.T) {
	w, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Record(&Record{Rec: KindRun, Format: Format, RunID: "late"})
	if n := w.Lost(); n != 1 {
		t.Fatalf("lost %d, want 1", n)
	}
}

// A writer gives a Sink's stream sinkRotate lines, then starts another,
// so that a long-lived writer's old lines can age out as whole streams;
// each stream's chain verifies on its own.
func TestWriterRotatesSinkStreams(t *testing.T) {
	sink := &sinkFunc{}
	w, err := Open(Options{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 * sinkRotate {
		w.Record(&Record{Rec: KindRun, Format: Format, RunID: "r" + strconv.Itoa(i)})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.n) < 2 {
		t.Fatalf("%d lines in %d stream(s): no new stream after %d lines", len(sink.lines), len(sink.n), sinkRotate)
	}
	if _, err := VerifyLines(func(yield func(Line) error) error {
		for _, l := range sink.lines {
			if err := yield(l); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A file the writer is done with (rotated, or at Close) is synced to disk
// whole, and its directory with it, before the writer goes on: after a
// power loss only the file being written can have lost lines, and the
// files before it are all there, so a reader's chain and numbering find
// what was lost.
func TestWriterSyncsEachFileItIsDoneWith(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(Options{Dir: dir, MaxFileSize: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	type synced struct {
		name string
		size int64
	}
	var got []synced
	w.sync = func(f *os.File) error { // the loop calls it, after Record made it
		st, err := f.Stat()
		if err != nil {
			return err
		}
		got = append(got, synced{f.Name(), st.Size()})
		return f.Sync()
	}
	for _, r := range sample(20) {
		w.Record(r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := Files(dir)
	if len(files) < 2 {
		t.Fatalf("files = %v, want rotation", files)
	}
	var want []synced
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, synced{f, st.Size()}, synced{dir, 0})
	}
	for i := range got {
		if got[i].name == dir {
			got[i].size = 0
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("synced (file, size):\n%v\nwant each file whole, then its directory:\n%v", got, want)
	}
}
