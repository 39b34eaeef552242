package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// jsonOf is v as JSON with its maps' keys sorted, for comparing runs.
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(x)
	return string(b)
}

// copyRun is a deep copy of cp, as a read gives it back.
func copyRun(t testing.TB, cp run.Checkpoint) run.Checkpoint {
	t.Helper()
	b, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	var out run.Checkpoint
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// change is the delta that takes cp one save further (a value, a thread
// value, a message, a new call and a changed one, pad bytes of payload),
// and cp with it applied.
func change(t testing.TB, cp run.Checkpoint, pad int) (run.Delta, run.Checkpoint) {
	t.Helper()
	n := cp.Seq
	d := run.Delta{RunID: cp.RunID, Base: cp.Seq, Generation: cp.Generation, Status: run.Running, Stage: "inferred",
		Step: cp.Step, Revision: cp.Revision + 1,
		Values:       map[string]any{"n": float64(n), "pad": strings.Repeat("x", pad)},
		ThreadValues: map[string]any{"t.last": fmt.Sprint("c", n)},
		MessagesFrom: len(cp.Messages),
		Messages:     []model.Message{{Role: model.RoleTool, Content: fmt.Sprint("result ", n, " <&>\n"), ToolCallID: "c1"}},
		CallCount:    len(cp.Calls) + 1,
		Calls: []run.CallChange{
			{Index: 0, Record: run.CallRecord{Call: model.ToolCall{ID: "c1", Name: "bash", Args: map[string]any{}}, Status: run.CallRunning, Started: true}},
			{Index: len(cp.Calls), Record: run.CallRecord{Call: model.ToolCall{ID: fmt.Sprint("n", n), Name: "noop", Args: map[string]any{}}, Status: run.CallNew}},
		},
	}
	next := copyRun(t, cp)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var dd run.Delta
	if err := json.Unmarshal(b, &dd); err != nil {
		t.Fatal(err)
	}
	if err := next.Apply(dd); err != nil {
		t.Fatal(err)
	}
	return d, next
}

// saved puts a run and appends k changes to it; it returns the run as
// saved after each (the first is the base).
func saved(t testing.TB, s *Store, id string, k, pad int) []run.Checkpoint {
	t.Helper()
	ctx := context.Background()
	cp := sampleCheckpoint(id, "t")
	cp.Seq = 1
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	out := []run.Checkpoint{copyRun(t, cp)}
	for range k {
		d, next := change(t, cp, pad)
		if err := s.AppendRun(ctx, d); err != nil {
			t.Fatal(err)
		}
		cp = next
		out = append(out, copyRun(t, cp))
	}
	return out
}

func readRun(t testing.TB, s *Store, id string) (run.Checkpoint, bool) {
	t.Helper()
	cp, ok, err := s.Run(context.Background(), id)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return cp, ok
}

func logOf(t testing.TB, dir, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, runsDir, id+logExt))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return b
}

// A change is one line appended to the run's log and fsynced; the first
// line of a log also fsyncs the directory (the new file's entry). PutRun
// over a log writes the base as any record (the old base's second name,
// kept in case the directory's fsync fails, goes after it), then removes
// the log;
// DeleteRun removes the base before the log. Skipping an fsync, writing
// the base in place or removing the log first changes the sequence.
func TestAppendRunSteps(t *testing.T) {
	ctx := context.Background()
	s, rec, _ := openRec(t)
	cp := sampleCheckpoint("r", "t")
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	rec.take()
	d, cp := change(t, cp, 10)
	if err := s.AppendRun(ctx, d); err != nil {
		t.Fatal(err)
	}
	want := []string{"open-append runs/r.log", "write runs/r.log", "sync runs/r.log", "close runs/r.log", "sync-dir runs"}
	if got := rec.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("first AppendRun steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	d, cp = change(t, cp, 10)
	if err := s.AppendRun(ctx, d); err != nil {
		t.Fatal(err)
	}
	want = want[:4]
	if got := rec.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("second AppendRun steps (the log exists; the store knows the run):\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	cp.Step = 9
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	want = []string{"create-temp runs", "write runs/<tmp2>", "sync runs/<tmp2>", "close runs/<tmp2>",
		"link runs/r.json runs/<tmp2>-prev", "rename runs/<tmp2> runs/r.json", "sync-dir runs",
		"remove runs/<tmp2>-prev", "remove runs/r.log", "sync-dir runs"}
	if got := rec.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("PutRun over a log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	d, _ = change(t, cp, 10)
	if err := s.AppendRun(ctx, d); err != nil {
		t.Fatal(err)
	}
	rec.take()
	if err := s.DeleteRun(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	want = []string{"remove runs/r.json", "sync-dir runs", "remove runs/r.log", "sync-dir runs"}
	if got := rec.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("DeleteRun with a log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Run gives the base with every change applied, in this process and in
// another one; without compaction below compactMin the log keeps each
// change.
func TestAppendRunRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	runs := saved(t, s, "r", 20, 100)
	got, ok := readRun(t, s, "r")
	if !ok || jsonOf(t, got) != jsonOf(t, runs[20]) {
		t.Fatalf("read back:\n%s\nwant\n%s", jsonOf(t, got), jsonOf(t, runs[20]))
	}
	if n := bytes.Count(logOf(t, dir, "r"), []byte("\n")); n != 20 {
		t.Fatalf("the log has %d lines, want 20 (one per change)", n)
	}
	got, ok = readRun(t, open(t, dir), "r")
	if !ok || jsonOf(t, got) != jsonOf(t, runs[20]) || got.Seq != 21 {
		t.Fatalf("read back by another process: seq %d\n%s", got.Seq, jsonOf(t, got))
	}
}

// When the log outgrows the base the store writes the run as a new base
// and removes the log: the log never stays larger than its base (nor
// compactAt), and what is read is the same before and after.
func TestCompaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	s.compactAt = 0
	runs := saved(t, s, "r", 0, 0)
	cp, compactions := runs[0], 0
	for i := range 40 {
		before := logOf(t, dir, "r")
		d, next := change(t, cp, 500)
		if err := s.AppendRun(ctx, d); err != nil {
			t.Fatal(err)
		}
		cp = next
		base, err := os.ReadFile(filepath.Join(dir, runsDir, "r"+ext))
		if err != nil {
			t.Fatal(err)
		}
		log := logOf(t, dir, "r")
		if len(log) > len(base) {
			t.Fatalf("change %d: a log of %d bytes over a base of %d", i, len(log), len(base))
		}
		if len(log) < len(before) {
			compactions++
			var f runFile
			if err := json.Unmarshal(base, &f); err != nil {
				t.Fatal(err)
			}
			if jsonOf(t, f.Checkpoint) != jsonOf(t, cp) || len(log) != 0 {
				t.Fatalf("change %d: the compacted base is not the run (log %d bytes)", i, len(log))
			}
		}
		if got, ok := readRun(t, open(t, dir), "r"); !ok || jsonOf(t, got) != jsonOf(t, cp) {
			t.Fatalf("change %d: read back differs", i)
		}
	}
	if compactions < 2 {
		t.Fatalf("%d compactions in 40 changes", compactions)
	}

	// With the default threshold, small runs' logs grow to compactMin.
	dir = t.TempDir()
	s = open(t, dir)
	saved(t, s, "r", 30, 100)
	if n := bytes.Count(logOf(t, dir, "r"), []byte("\n")); n != 30 {
		t.Fatalf("a log under compactMin was compacted: %d lines left of 30", n)
	}
}

// A change on another save of the run (older, newer) or of a run not in
// the store is revision_conflict and writes nothing.
func TestAppendRunWrongBase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	runs := saved(t, s, "r", 3, 10)
	log := logOf(t, dir, "r")
	for _, base := range []uint64{runs[3].Seq - 1, runs[3].Seq + 1, 0} {
		d, _ := change(t, runs[3], 10)
		d.Base = base
		if err := s.AppendRun(ctx, d); errs.CodeOf(err) != errs.RevisionConflict {
			t.Fatalf("a change on save %d of a run at %d: %v, want revision_conflict", base, runs[3].Seq, err)
		}
		// Another process (the store reads the files) refuses it too.
		if err := open(t, dir).AppendRun(ctx, d); errs.CodeOf(err) != errs.RevisionConflict {
			t.Fatalf("a change on save %d, read from disk: %v, want revision_conflict", base, err)
		}
	}
	d, _ := change(t, runs[3], 10)
	d.RunID = "missing"
	if err := s.AppendRun(ctx, d); errs.CodeOf(err) != errs.RevisionConflict {
		t.Fatalf("a change of a run not in the store: %v, want revision_conflict", err)
	}
	if !bytes.Equal(logOf(t, dir, "r"), log) {
		t.Fatal("a refused change wrote to the log")
	}
	if _, err := os.Stat(filepath.Join(dir, runsDir, "missing"+logExt)); !os.IsNotExist(err) {
		t.Fatalf("a change of a run not in the store made a log: %v", err)
	}
	if got, _ := readRun(t, s, "r"); jsonOf(t, got) != jsonOf(t, runs[3]) {
		t.Fatal("a refused change changed the run")
	}
}

// A change whose AppendRun returned an error is not in the store: the
// line written before the failing step is taken back, so the run reads as
// before the save in this process and after a restart (a sidecar drops a
// run whose save failed and restores it, then the client retries the
// call). When the log cannot be cut, the run is rewritten as before the
// save; when that fails too, this process reads the log only up to the
// line, and the next save rewrites the run. Either way the retried change
// then saves and reads back.
func TestFailedAppendIsNotApplied(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		fail []string // the steps that fail, once each
		k    int      // changes saved before (0: the line starts the log)
		// held: the line is kept out of reads in this process only (the
		// disk refused every write that would take it back).
		held bool
	}{
		{name: "open", fail: []string{"open-append"}, k: 2},
		{name: "write", fail: []string{"write"}, k: 2},
		{name: "sync", fail: []string{"sync"}, k: 2},
		{name: "close", fail: []string{"close"}, k: 2},
		{name: "sync of the new log's directory", fail: []string{"sync-dir"}, k: 0},
		{name: "sync, log not cut", fail: []string{"sync", "truncate"}, k: 2},
		{name: "close, log not cut, run not rewritten", fail: []string{"close", "truncate", "rename"}, k: 2, held: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, rec, dir := openRec(t)
			runs := saved(t, s, "r", tc.k, 10)
			before := runs[tc.k]
			d, after := change(t, before, 10)
			rec.arm(tc.fail...)
			if err := s.AppendRun(ctx, d); !errors.Is(err, errInjected) {
				t.Fatalf("AppendRun with %v failing: %v", tc.fail, err)
			}
			rec.arm("")
			if got, ok := readRun(t, s, "r"); !ok || jsonOf(t, got) != jsonOf(t, before) {
				t.Fatalf("a failed AppendRun is read back: %v seq %d, before the save %d", ok, got.Seq, before.Seq)
			}
			if !tc.held {
				if got, ok := readRun(t, open(t, dir), "r"); !ok || jsonOf(t, got) != jsonOf(t, before) {
					t.Fatalf("after a restart a failed AppendRun is read back: %v seq %d, before the save %d", ok, got.Seq, before.Seq)
				}
			}
			if p := s.Problems(); len(p) != 0 {
				t.Fatalf("a failed save reported as corruption: %+v", p)
			}
			if err := s.AppendRun(ctx, d); err != nil {
				t.Fatalf("the retried change: %v", err)
			}
			for _, st := range []*Store{s, open(t, dir)} {
				if got, ok := readRun(t, st, "r"); !ok || jsonOf(t, got) != jsonOf(t, after) {
					t.Fatalf("the retried change reads back %v: seq %d, want %d", ok, got.Seq, after.Seq)
				}
			}
		})
	}
}

// A last line that a crash cut short or garbled was never acknowledged: a
// read drops it and gives every change before it, reports nothing, and the
// next change (in another process) follows the good lines, not the bad one.
func TestTornLastLineIsDropped(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func(log []byte) []byte
		kept int // changes read back of 4
	}{
		{"cut mid-line", func(log []byte) []byte { return log[:len(log)-40] }, 3},
		{"cut before its newline", func(log []byte) []byte { return log[:len(log)-1] }, 3},
		{"garbled", func(log []byte) []byte {
			out := bytes.Clone(log)
			out[len(out)-30] ^= 0x20
			return out
		}, 3},
		{"zeros after it", func(log []byte) []byte {
			out := bytes.Clone(log)
			at := bytes.LastIndexByte(out[:len(out)-1], '\n') + 1
			copy(out[at+20:], make([]byte, len(out)-at-20))
			return out
		}, 3},
		{"zeros after a good line", func(log []byte) []byte { return append(bytes.Clone(log), make([]byte, 300)...) }, 4},
		{"half a checksum", func(log []byte) []byte { return append(bytes.Clone(log), "8f3a"...) }, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := open(t, dir)
			runs := saved(t, s, "r", 4, 100)
			path := filepath.Join(dir, runsDir, "r"+logExt)
			if err := os.WriteFile(path, tc.tear(logOf(t, dir, "r")), 0o600); err != nil {
				t.Fatal(err)
			}
			s = open(t, dir)
			got, ok := readRun(t, s, "r")
			if !ok || jsonOf(t, got) != jsonOf(t, runs[tc.kept]) {
				t.Fatalf("read %v: seq %d, want the run after %d changes (seq %d)", ok, got.Seq, tc.kept, runs[tc.kept].Seq)
			}
			if p := s.Problems(); len(p) != 0 {
				t.Fatalf("a torn last line reported as corruption: %+v", p)
			}
			d, want := change(t, runs[tc.kept], 100)
			if err := s.AppendRun(ctx, d); err != nil {
				t.Fatalf("the next change: %v", err)
			}
			if got, ok := readRun(t, open(t, dir), "r"); !ok || jsonOf(t, got) != jsonOf(t, want) {
				t.Fatalf("after the next change, read back %v: seq %d, want %d", ok, got.Seq, want.Seq)
			}
			if log := logOf(t, dir, "r"); bytes.Count(log, []byte("\n")) != 1 || bytes.IndexByte(log, 0) >= 0 {
				t.Fatalf("the next change did not start a clean log:\n%q", log)
			}
		})
	}
}

// A bad line before a good one is corruption, never dropped silently: the
// run's base and log are set aside and reported, and the run reads as
// missing (as a corrupt record does), so a save cannot build on part of it.
func TestCorruptLogIsReported(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(lines [][]byte) [][]byte
	}{
		{"a garbled line", func(lines [][]byte) [][]byte {
			lines[1] = bytes.Clone(lines[1])
			lines[1][len(lines[1])/2] ^= 0x01
			return lines
		}},
		{"a line twice", func(lines [][]byte) [][]byte {
			return append(lines[:2:2], append([][]byte{lines[1]}, lines[2:]...)...)
		}},
		{"a line missing", func(lines [][]byte) [][]byte { return append(lines[:1:1], lines[2:]...) }},
		{"a line of another run", func(lines [][]byte) [][]byte {
			var l logLine
			body := bytes.TrimSuffix(lines[1][9:], []byte("\n"))
			if err := json.Unmarshal(body, &l); err != nil {
				panic(err)
			}
			l.Delta.RunID = "other"
			line, err := encodeLine(l.Epoch, l.Delta)
			if err != nil {
				panic(err)
			}
			lines[1] = line
			return lines
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := open(t, dir)
			runs := saved(t, s, "r", 4, 100)
			lines := bytes.SplitAfter(logOf(t, dir, "r"), []byte("\n"))
			lines = tc.corrupt(lines[:4])
			if err := os.WriteFile(filepath.Join(dir, runsDir, "r"+logExt), bytes.Join(lines, nil), 0o600); err != nil {
				t.Fatal(err)
			}
			s = open(t, dir)
			if _, ok := readRun(t, s, "r"); ok {
				t.Fatal("a run with a corrupt log was read")
			}
			p := s.Problems()
			if len(p) != 2 || !strings.HasSuffix(p[0].Path, "r"+ext) || !strings.HasSuffix(p[1].Path, "r"+logExt) ||
				!strings.Contains(p[1].Err, "corrupt log") {
				t.Fatalf("problems: %+v", p)
			}
			for _, q := range p {
				if _, err := os.Stat(q.SetAsidePath); err != nil {
					t.Fatalf("set aside: %v", err)
				}
			}
			d, _ := change(t, runs[4], 100)
			if err := s.AppendRun(ctx, d); errs.CodeOf(err) != errs.RevisionConflict {
				t.Fatalf("a change of a run set aside: %v, want revision_conflict", err)
			}
		})
	}
}

// A crash at any step of a save (an append, one that compacts, a PutRun or
// a DeleteRun over a log, the first append after a torn line) loses
// nothing acknowledged: after a restart the run is as before the save or as
// after it (as after it when the save returned), never a mix, nothing is
// reported corrupt, and the next change saves and reads back. The crash is
// simulated by failing the step and every later one (a write that crashes
// writes half its bytes); data the kernel had not written back is not
// modelled (TestAppendRunSteps checks the fsyncs).
func TestCrashAtEachStep(t *testing.T) {
	ctx := context.Background()
	type scenario struct {
		before, after *run.Checkpoint // after nil: the run is gone
		op            func(s *Store) error
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) scenario
	}{
		{"append", func(t *testing.T, dir string) scenario {
			runs := saved(t, open(t, dir), "r", 2, 100)
			d, after := change(t, runs[2], 100)
			return scenario{&runs[2], &after, func(s *Store) error { return s.AppendRun(ctx, d) }}
		}},
		{"append that compacts", func(t *testing.T, dir string) scenario {
			runs := saved(t, open(t, dir), "r", 2, 100)
			d, after := change(t, runs[2], 6000)
			return scenario{&runs[2], &after, func(s *Store) error {
				s.compactAt = 0
				return s.AppendRun(ctx, d)
			}}
		}},
		{"put over a log", func(t *testing.T, dir string) scenario {
			runs := saved(t, open(t, dir), "r", 3, 100)
			next := copyRun(t, runs[3])
			next.Seq, next.Step, next.Calls = next.Seq+1, 7, nil
			return scenario{&runs[3], &next, func(s *Store) error { return s.PutRun(ctx, next) }}
		}},
		{"delete with a log", func(t *testing.T, dir string) scenario {
			runs := saved(t, open(t, dir), "r", 3, 100)
			return scenario{&runs[3], nil, func(s *Store) error { return s.DeleteRun(ctx, "r") }}
		}},
		{"append after a torn line", func(t *testing.T, dir string) scenario {
			runs := saved(t, open(t, dir), "r", 3, 100)
			path := filepath.Join(dir, runsDir, "r"+logExt)
			log := logOf(t, dir, "r")
			if err := os.WriteFile(path, log[:len(log)-30], 0o600); err != nil {
				t.Fatal(err)
			}
			d, after := change(t, runs[2], 100)
			return scenario{&runs[2], &after, func(s *Store) error { return s.AppendRun(ctx, d) }}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A save without a crash, to count its steps.
			dir := t.TempDir()
			sc := tc.setup(t, dir)
			rec := newRecFS(dir)
			s, err := openFS(dir, nil, rec)
			if err != nil {
				t.Fatal(err)
			}
			rec.take()
			if err := sc.op(s); err != nil {
				t.Fatal(err)
			}
			steps := rec.take()
			for k := 1; k <= len(steps); k++ {
				dir := t.TempDir()
				sc := tc.setup(t, dir)
				rec := newRecFS(dir)
				s, err := openFS(dir, nil, rec)
				if err != nil {
					t.Fatal(err)
				}
				rec.crashIn = k
				opErr := sc.op(s)
				if opErr != nil && !errors.Is(opErr, errCrashing) && !errors.Is(opErr, errCrashed) {
					t.Fatalf("crash at %q: %v", steps[k-1], opErr)
				}
				// The restart.
				s = open(t, dir)
				got, ok := readRun(t, s, "r")
				switch {
				case sc.after == nil && !ok:
				case sc.after != nil && ok && jsonOf(t, got) == jsonOf(t, *sc.after):
				case opErr != nil && ok && jsonOf(t, got) == jsonOf(t, *sc.before):
				default:
					t.Fatalf("crash at step %d (%s), save returned %v: read %v seq %d; before: seq %d, after: %v",
						k, steps[k-1], opErr, ok, got.Seq, sc.before.Seq, sc.after != nil)
				}
				if p := s.Problems(); len(p) != 0 {
					t.Fatalf("crash at %s: reported corrupt: %+v", steps[k-1], p)
				}
				if !ok {
					continue
				}
				d, want := change(t, got, 100)
				if err := s.AppendRun(ctx, d); err != nil {
					t.Fatalf("crash at %s: the next change: %v", steps[k-1], err)
				}
				if again, _ := readRun(t, open(t, dir), "r"); jsonOf(t, again) != jsonOf(t, want) {
					t.Fatalf("crash at %s: the next change did not read back", steps[k-1])
				}
			}
		})
	}
}

// Open removes the log of a run whose base is gone (a crash in DeleteRun),
// but keeps one whose base was set aside as corrupt, and every other.
func TestOpenRemovesOrphanLogs(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	saved(t, s, "kept", 2, 10)
	runs := filepath.Join(dir, runsDir)
	for name, data := range map[string]string{"orphan.log": "x\n", "aside.log": "y\n", "aside.json.corrupt-123": "{"} {
		if err := os.WriteFile(filepath.Join(runs, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	open(t, dir)
	for name, want := range map[string]bool{"orphan.log": false, "aside.log": true, "kept.log": true, "kept.json": true} {
		if _, err := os.Stat(filepath.Join(runs, name)); (err == nil) != want {
			t.Fatalf("%s: exists %v, want %v", name, err == nil, want)
		}
	}
}

// FuzzRunLog feeds arbitrary bytes as a run's log: replaying it on the
// base gives the run at or after its base, or reports the log corrupt; it
// never panics. Replaying a log that is clean and good again gives the
// same run (nothing depends on the order maps are walked in).
func FuzzRunLog(f *testing.F) {
	dir := f.TempDir()
	runs := saved(f, open(f, dir), "r", 3, 20)
	log := logOf(f, dir, "r")
	base, err := os.ReadFile(filepath.Join(dir, runsDir, "r"+ext))
	if err != nil {
		f.Fatal(err)
	}
	var rf runFile
	if err := json.Unmarshal(base, &rf); err != nil {
		f.Fatal(err)
	}
	f.Add(log)
	f.Add(log[:len(log)-7])
	f.Add(append(bytes.Clone(log), 0, 0, 0))
	f.Add([]byte("00000000 {}\n"))
	f.Add([]byte("zzzzzzzz {}\n{}\n"))
	f.Add([]byte("\n\n\n"))
	for _, d := range []run.Delta{
		{RunID: "r", Base: 1, CallCount: 1 << 50},
		{RunID: "r", Base: 1, MessagesFrom: 99},
		{RunID: "r", Base: 1, CallCount: 1, Calls: []run.CallChange{{Index: -1}}},
		{RunID: "r", Base: 1, ToolCalls: map[string]any{"c": 1.0}, Values: map[string]any{run.KeyToolCalls: []any{}}},
		{RunID: "r", Base: 1, ToolCalls: map[string]any{"c": 1.0}},
	} {
		line, err := encodeLine(rf.Epoch, d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
		f.Add(append(line, log...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cp := copyRun(t, rf.Checkpoint)
		clean, err := replay(&cp, rf.Epoch, data)
		if err != nil {
			return
		}
		if cp.Seq < runs[0].Seq {
			t.Fatalf("replayed to seq %d, below the base's %d", cp.Seq, runs[0].Seq)
		}
		again := copyRun(t, rf.Checkpoint)
		if clean2, err := replay(&again, rf.Epoch, data); err != nil || clean2 != clean || jsonOf(t, again) != jsonOf(t, cp) {
			t.Fatalf("a second replay differs: %v", err)
		}
	})
}
