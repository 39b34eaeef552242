package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/model"
)

func write(t *testing.T, o Options, recs ...*Record) []string {
	t.Helper()
	w, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		w.Record(r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := Files(o.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sample(n int) []*Record {
	out := []*Record{{Rec: KindRun, Format: Format, RunID: "r1", ThreadID: "t1", Agent: "default"}}
	for i := 0; i < n; i++ {
		out = append(out, &Record{Rec: KindPhase, RunID: "r1", Phase: ToolGate, Step: 1,
			Input:     &Input{Call: &model.ToolCall{ID: "c", Name: "shell", Args: map[string]any{"command": "ls", "password": "hunter2"}}},
			Decisions: []Decision{{CallID: "c", Tool: "shell", Decision: gate.Allow}}})
	}
	return append(out, &Record{Rec: KindEnd, RunID: "r1", Termination: "natural", Steps: 1})
}

func readAll(t *testing.T, paths ...string) ([]*Record, []Problem) {
	t.Helper()
	var out []*Record
	problems, err := Read(paths, func(_ Pos, r *Record) error { out = append(out, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out, problems
}

func TestWriteReadVerify(t *testing.T) {
	dir := t.TempDir()
	files := write(t, Options{Dir: dir, Mask: []string{"PASSWORD"}}, sample(3)...)
	if len(files) != 1 {
		t.Fatalf("files = %v", files)
	}
	recs, problems := readAll(t, dir)
	if len(recs) != 5 || len(problems) != 0 {
		t.Fatalf("read %d records, problems %v", len(recs), problems)
	}
	if recs[0].Prev != "" || recs[1].Prev != recs[0].Sum || recs[1].Sum == "" {
		t.Errorf("chain: %q %q %q", recs[0].Prev, recs[1].Prev, recs[0].Sum)
	}
	args := recs[1].Input.Call.Args
	if args["password"] != Masked || args["command"] != "ls" {
		t.Errorf("masked args = %v", args)
	}
	if strings.Join(recs[1].Masked, ",") != "call.args.password" {
		t.Errorf("masked = %v", recs[1].Masked)
	}
	n, problems, err := Verify([]string{dir})
	if err != nil || n != 5 || len(problems) != 0 {
		t.Fatalf("verify: %d %v %v", n, problems, err)
	}
}

func TestMaskDoesNotChangeTheCallersRecord(t *testing.T) {
	recs := sample(1)
	write(t, Options{Dir: t.TempDir(), Mask: []string{"password"}}, recs...)
	if recs[1].Input.Call.Args["password"] != "hunter2" {
		t.Fatal("the writer masked the caller's arguments in place")
	}
}

func TestMaskPaths(t *testing.T) {
	m := NewMask([]string{"headers.authorization", "token"})
	var masked []string
	v, changed := m.maskValue(map[string]any{
		"headers":       map[string]any{"Authorization": "Bearer x", "accept": "json"},
		"list":          []any{map[string]any{"token": "t"}, "keep"},
		"authorization": "not under headers",
	}, "call.args", nil, &masked)
	got := v.(map[string]any)
	if !changed || got["headers"].(map[string]any)["Authorization"] != Masked || got["headers"].(map[string]any)["accept"] != "json" {
		t.Errorf("headers: %v", got["headers"])
	}
	if got["authorization"] != "not under headers" {
		t.Errorf("a top-level authorization was masked: %v", got)
	}
	if got["list"].([]any)[0].(map[string]any)["token"] != Masked || got["list"].([]any)[1] != "keep" {
		t.Errorf("list: %v", got["list"])
	}
}

// Editing one byte of any line makes Verify fail at that line.
func TestVerifyFindsAnEditAtItsLine(t *testing.T) {
	dir := t.TempDir()
	files := write(t, Options{Dir: dir}, sample(4)...)
	orig, _ := os.ReadFile(files[0])
	lines := strings.SplitAfter(string(orig), "\n")
	for i := 0; i < len(lines)-1; i++ {
		for _, target := range []string{"r1", "allow", "natural", "default"} {
			j := strings.Index(lines[i], target)
			if j < 0 {
				continue
			}
			edited := append([]string(nil), lines...)
			b := []byte(edited[i])
			b[j]++
			edited[i] = string(b)
			if err := os.WriteFile(files[0], []byte(strings.Join(edited, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := Verify([]string{dir})
			want := files[0] + ":" + strconv.Itoa(i+1) + ":"
			if !errors.Is(err, errs.JournalTampered) || !strings.Contains(err.Error(), want) {
				t.Errorf("line %d edited at %q: verify = %v, want %s", i+1, target, err, want)
			}
			break
		}
	}
	// Removing a line is found at the line after it.
	removed := lines[0] + strings.Join(lines[2:], "")
	os.WriteFile(files[0], []byte(removed), 0o644)
	if _, _, err := Verify([]string{dir}); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Errorf("a removed line: %v", err)
	}
}

// A torn last line (a crash while writing) is reported and skipped; every
// earlier record is still read and verified.
func TestTornLastLine(t *testing.T) {
	dir := t.TempDir()
	files := write(t, Options{Dir: dir}, sample(2)...)
	b, _ := os.ReadFile(files[0])
	cut := b[:len(b)-20]
	os.WriteFile(files[0], cut, 0o644)
	recs, problems := readAll(t, dir)
	if len(recs) != 3 || len(problems) != 1 || !strings.Contains(problems[0].Msg, "incomplete") || problems[0].Line != 4 {
		t.Fatalf("records %d, problems %v", len(recs), problems)
	}
	n, problems, err := Verify([]string{dir})
	if err != nil || n != 3 || len(problems) != 1 {
		t.Fatalf("verify: %d %v %v", n, problems, err)
	}
}

func TestOtherFormatIsRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, Options{Dir: dir}, &Record{Rec: KindRun, Format: 2, RunID: "r"})
	_, err := Read([]string{dir}, func(Pos, *Record) error { return nil })
	if !errors.Is(err, errs.JournalInvalid) || !strings.Contains(err.Error(), "format 2") {
		t.Fatalf("err = %v", err)
	}
}

func TestRotationAndAgeOut(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "journal-20200101T000000.000Z-1-0001.ndjson")
	os.WriteFile(old, []byte("{}\n"), 0o644)
	past := time.Now().Add(-48 * time.Hour)
	os.Chtimes(old, past, past)
	files := write(t, Options{Dir: dir, MaxFileSize: 600, MaxAge: 24 * time.Hour}, sample(10)...)
	if len(files) < 3 {
		t.Fatalf("no rotation: %v", files)
	}
	for _, f := range files {
		if f == old {
			t.Fatal("an old file was not aged out")
		}
	}
	recs, problems := readAll(t, dir)
	if len(recs) != 12 || len(problems) != 0 {
		t.Fatalf("records %d problems %v", len(recs), problems)
	}
	if _, _, err := Verify([]string{dir}); err != nil {
		t.Fatal(err)
	}
}

// A record kept past Record (a shadow's queue) must be detached first: the
// writer recycles its slot once written.
func TestDetachedRecordOutlivesItsSlot(t *testing.T) {
	w, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sl := w.Slot()
	sl.Rec.Rec, sl.Rec.RunID, sl.Rec.Phase = KindPhase, "r1", "tool_gate"
	sl.SetCall(model.ToolCall{ID: "c1", Name: "shell", Args: map[string]any{"cmd": "ls"}})
	sl.SetDecision(Decision{CallID: "c1", Tool: "shell", Decision: gate.Block, Plugin: "policy"})
	kept := Detach(&sl.Rec)
	w.Record(&sl.Rec)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if kept.Input == nil || kept.Input.Call == nil || kept.Input.Call.Name != "shell" ||
		len(kept.Decisions) != 1 || kept.Decisions[0].Decision != gate.Block || kept.RunID != "r1" {
		t.Fatalf("the detached record lost its values: %+v", kept)
	}
	if plain := NewSlot(); Detach(&plain.Rec) != &plain.Rec {
		t.Fatal("a record no writer recycles needs no copy")
	}
}

// A writer makes its file at its first record: one that records nothing
// (dev, an idle sidecar) leaves no empty file, and Open still refuses a
// directory no file can be made in.
func TestWriterMakesNoFileUntilARecord(t *testing.T) {
	for _, tc := range []struct {
		name  string
		recs  []*Record
		files int
	}{
		{"no record", nil, 0},
		{"records", sample(2), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if files := write(t, Options{Dir: dir}, tc.recs...); len(files) != tc.files {
				t.Fatalf("files = %v, want %d", files, tc.files)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != tc.files {
				t.Fatalf("the directory holds %d entries, want %d (a probe left behind?)", len(ents), tc.files)
			}
		})
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if _, err := Open(Options{Dir: file}); err == nil {
		t.Fatal("Open of a file as the directory succeeded")
	}
}

// sealedFile writes a journal file of the record bodies, chained as the
// writer chains them, and returns its path.
func sealedFile(t *testing.T, dir string, bodies ...[]byte) string {
	t.Helper()
	var b []byte
	prev := ""
	for _, body := range bodies {
		line := seal(prev, body)
		_, sum, _, err := parseSeal(line)
		if err != nil {
			t.Fatal(err)
		}
		prev = sum
		b = append(append(b, line...), '\n')
	}
	path := filepath.Join(dir, "journal-20260101T000000.000Z-1-0001.ndjson")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A line longer than a reader takes (maxLine; this version's writer never
// writes one) does not stop the journal: Read reports it as a Problem at
// its file:line, saying what to do, and reads the lines after it (other
// runs included). Verify still checks its link, hashing it as it reads,
// so an edit inside it is found at its line; torn, it is an incomplete
// last line.
func TestOverLongLineIsSkippedAndTheRestRead(t *testing.T) {
	dir := t.TempDir()
	huge := append([]byte(`{"rec":"phase","run_id":"big","phase":"run_start","input":{"reason":"`), bytes.Repeat([]byte("x"), maxLine)...)
	huge = append(huge, `"}}`...)
	path := sealedFile(t, dir,
		[]byte(`{"rec":"run","format":1,"run_id":"big"}`), huge, []byte(`{"rec":"end","run_id":"big"}`),
		[]byte(`{"rec":"run","format":1,"run_id":"small"}`), []byte(`{"rec":"end","run_id":"small"}`))
	huge = nil
	names := func(recs []*Record) string {
		var out []string
		for _, r := range recs {
			out = append(out, r.Rec+":"+r.RunID)
		}
		return strings.Join(out, " ")
	}
	recs, problems := readAll(t, dir)
	// The lost line may be run big's (it is): big's later records are
	// left out, with a problem of their own; run small is read whole.
	if got := names(recs); got != "run:big run:small end:small" {
		t.Fatalf("read %s, problems %v", got, problems)
	}
	if len(problems) != 2 || problems[0].Line != 2 || !strings.Contains(problems[0].String(), path+":2: a line of") ||
		!strings.Contains(problems[0].Msg, "the lines after it are read") || !strings.Contains(problems[0].Msg, "sed -n 2p "+path) ||
		problems[1].Line != 3 || !strings.Contains(problems[1].Msg, "run big: line 2 could not be read") {
		t.Fatalf("problems %v", problems)
	}
	n, problems, err := Verify([]string{dir})
	if err != nil || n != 5 || len(problems) != 1 || problems[0].Line != 2 || !strings.Contains(problems[0].Msg, "its link holds") {
		t.Fatalf("verify: %d %v %v", n, problems, err)
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mid := bytes.Index(b, []byte("xxxx")) + maxLine/2
	b[mid] = 'y'
	os.WriteFile(path, b, 0o644)
	if _, _, err := Verify([]string{dir}); !errors.Is(err, errs.JournalTampered) || !strings.Contains(err.Error(), path+":2:") {
		t.Fatalf("an edit inside the long line: verify = %v", err)
	}

	os.WriteFile(path, b[:mid], 0o644)
	recs, problems = readAll(t, dir)
	if got := names(recs); got != "run:big" || len(problems) != 1 || problems[0].Line != 2 || !strings.Contains(problems[0].Msg, "incomplete") {
		t.Fatalf("torn: read %s, problems %v", got, problems)
	}
	n, problems, err = Verify([]string{dir})
	if err != nil || n != 1 || len(problems) != 1 || !strings.Contains(problems[0].Msg, "incomplete") {
		t.Fatalf("torn: verify: %d %v %v", n, problems, err)
	}
}

// A shadow's disagreement names the call it was about, with the enforced
// path's arguments, which the writer has not masked yet: the shadow
// record must not carry what the phase records mask.
func TestMaskCoversShadowRecords(t *testing.T) {
	dir := t.TempDir()
	args := map[string]any{"command": "ls", "password": "hunter2"}
	rewritten := map[string]any{"command": "ls -l", "password": "hunter2"}
	write(t, Options{Dir: dir, Mask: []string{"password"}},
		&Record{Rec: KindShadow, RunID: "r1", Phase: ToolGate, Step: 1, Shadow: &Flip{Kind: "allow->block", RunID: "r1",
			Phase: ToolGate, CallID: "c", Tool: "shell", Args: args, From: "allow", To: "block"}},
		&Record{Rec: KindShadow, RunID: "r1", Phase: ToolGate, Step: 1, Shadow: &Flip{Kind: "rewrite changed", RunID: "r1",
			Phase: ToolGate, CallID: "c", Tool: "shell", Args: args, From: ArgsText(rewritten), To: ArgsText(args),
			FromArgs: rewritten, ToArgs: args}})
	files, _ := Files(dir)
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("hunter2")) {
		t.Fatalf("a masked field reached the journal in a shadow record:\n%s", data)
	}
	recs, _ := readAll(t, dir)
	if len(recs) != 2 || recs[0].Shadow.Args["command"] != "ls" || recs[1].Shadow.From != ArgsText(map[string]any{"command": "ls -l", "password": Masked}) {
		t.Fatalf("shadow records read back: %+v %+v", recs[0].Shadow, recs[1].Shadow)
	}
	if args["password"] != "hunter2" || rewritten["password"] != "hunter2" {
		t.Fatal("the writer masked the shadow's arguments in place")
	}
}

// A resume's result becomes the call's tool result (use_decision_as_result)
// or its arguments' "decision" (pass_decision_to_tool), both masked where
// they are recorded: the resume's own record masks it too.
func TestMaskCoversResumeResults(t *testing.T) {
	dir := t.TempDir()
	result := map[string]any{"password": "hunter2", "note": "ok"}
	write(t, Options{Dir: dir, Mask: []string{"password"}},
		&Record{Rec: KindPhase, RunID: "r1", Phase: Resume, Step: 1,
			Input: &Input{Resume: []gate.Resume{{Target: "c", Action: "resume", Result: result}}}})
	files, _ := Files(dir)
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("hunter2")) {
		t.Fatalf("a masked field reached the journal in a resume's result:\n%s", data)
	}
	recs, _ := readAll(t, dir)
	if got := recs[0].Input.Resume[0].Result.(map[string]any); got["note"] != "ok" || got["password"] != Masked ||
		strings.Join(recs[0].Masked, ",") != "resume.result.password" {
		t.Fatalf("resume read back: %v, masked %v", got, recs[0].Masked)
	}
	if result["password"] != "hunter2" {
		t.Fatal("the writer masked the resume's result in place")
	}
}
