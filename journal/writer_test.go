package journal

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

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
