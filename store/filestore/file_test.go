package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// waitAll waits for wg, and fails the test if that takes a minute: a
// goroutine stuck on a regression must fail the test, not hang it.
func waitAll(t testing.TB, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("goroutines did not finish within a minute")
	}
}

func open(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sampleThread(id string) run.Thread {
	return run.Thread{
		ID: id,
		Values: map[string]any{
			"guard.calls":   3.0,
			"budget.tokens": map[string]any{"used": 1234.0, "limit": 100000.0, "ratio": 0.01234},
			"notes":         []any{"a", nil, true, false, 1.5, map[string]any{"k": []any{}}},
			"empty":         map[string]any{},
			"empty_list":    []any{},
			"text":          "<b>&amp;</b> \u2028 é 😀 \"quoted\" \x00 tab\t",
			"null":          nil,
			"big":           1e300,
			"small":         -5e-324,
			"neg_zero":      -0.25,
			"max_int":       9007199254740992.0,
		},
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "be careful"},
			{Role: model.RoleUser, Content: "clean /tmp/x"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				{ID: "c1", Name: "bash", Args: map[string]any{"cmd": "rm -rf /tmp/x", "timeout": 30.0}},
				{ID: "c2", Name: "noop", Args: map[string]any{}},
				{ID: "c3", Name: "nil_args"},
			}},
			{Role: model.RoleTool, Content: `{"status":"error"}`, ToolCallID: "c1"},
		},
		Aside:   map[string]any{"old.key": []any{"kept", 2.0}},
		Waiting: "run-1",
	}
}

func sampleCheckpoint(runID, threadID string) run.Checkpoint {
	blocked := model.ToolResult{Status: model.StatusError, Message: "blocked by guard", Data: map[string]any{"rejected": true}}
	done := model.Success(map[string]any{"stdout": "ok\n", "code": 0.0, "lines": []any{"a", "b"}})
	return run.Checkpoint{
		RunID: runID, ThreadID: threadID, AgentID: "default", Generation: "g7-3f2a",
		Status: run.Waiting, Stage: "gated", Step: 2, Termination: "suspended", Natural: false,
		Values:   map[string]any{"run.count": 2.0, "run.seen": []any{"bash", "noop"}},
		Messages: sampleThread(threadID).Messages,
		Offered:  []string{"bash", "noop", "edit"},
		Calls: []run.CallRecord{
			{
				Call:   model.ToolCall{ID: "c1", Name: "bash", Args: map[string]any{"cmd": "rm -rf /tmp/x"}},
				Status: run.CallSuspended,
				Gate: &run.GateRecord{
					Decision: gate.Suspend, Plugin: "permission", Reason: "needs approval",
					Ticket: &gate.Ticket{
						ID: "t-1", CallID: "c1", Action: "approve", Message: "allow rm?",
						Parameters:     map[string]any{"cmd": "rm -rf /tmp/x"},
						ResponseSchema: map[string]any{"type": "object", "required": []any{"ok"}},
						Options:        []string{"allow", "deny"},
						ResumeMode:     gate.UseDecisionAsResult,
					},
					Args: map[string]any{"cmd": "rm -rf /tmp/x"},
				},
			},
			{
				Call:   model.ToolCall{ID: "c2", Name: "edit", Args: map[string]any{"path": "a.txt"}},
				Status: run.CallFailed,
				Gate: &run.GateRecord{Decision: gate.Block, Plugin: "guard", Reason: "blocked by guard",
					Result: &blocked, Args: map[string]any{"path": "a.txt"}},
				Result: &blocked,
			},
			{
				Call:    model.ToolCall{ID: "c3", Name: "noop", Args: map[string]any{}},
				Status:  run.CallSucceeded,
				Gate:    &run.GateRecord{Decision: gate.Allow, Args: map[string]any{"x": 1.0}, RewrittenBy: "rewriter"},
				Result:  &done,
				Resume:  &run.ResumeRecord{Action: "resume", Result: map[string]any{"ok": true}, Reason: "approved", TicketID: "t-0", Mode: string(gate.PassDecisionToTool)},
				Started: true,
			},
		},
		Revision: 41,
	}
}

func TestThreadRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	want := sampleThread("user@example.com/chat 1")
	rev, err := s.PutThread(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if rev != 1 {
		t.Fatalf("revision = %d, want 1", rev)
	}
	want.Revision = 1
	got, ok, err := s.Thread(ctx, want.ID)
	if err != nil || !ok {
		t.Fatalf("Thread = ok %v, err %v", ok, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, want)
	}
	if _, ok, _ := s.Thread(ctx, "other"); ok {
		t.Fatal("a thread never saved exists")
	}
}

func TestRunRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	want := sampleCheckpoint("run-1", "thread-1")
	if err := s.PutRun(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Run(ctx, "run-1")
	if err != nil || !ok {
		t.Fatalf("Run = ok %v, err %v", ok, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, want)
	}

	// A later save replaces the earlier one.
	want.Step, want.Status, want.Calls = 3, run.Done, nil
	if err := s.PutRun(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Run(ctx, "run-1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after replace:\n got %#v\nwant %#v", got, want)
	}
}

func TestDeleteRun(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	if err := s.DeleteRun(ctx, "missing"); err != nil {
		t.Fatalf("delete of a missing run: %v", err)
	}
	if err := s.PutRun(ctx, sampleCheckpoint("r", "t")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Run(ctx, "r"); ok || err != nil {
		t.Fatalf("after delete: ok %v, err %v", ok, err)
	}
	if err := s.DeleteRun(ctx, "r"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func TestPutThreadRevision(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	th := run.Thread{ID: "t", Values: map[string]any{"n": 1.0}}

	// A new thread must be saved with revision 0.
	th.Revision = 5
	if _, err := s.PutThread(ctx, th); errs.CodeOf(err) != errs.RevisionConflict {
		t.Fatalf("new thread at revision 5: %v, want revision_conflict", err)
	}
	if _, ok, _ := s.Thread(ctx, "t"); ok {
		t.Fatal("a conflicting save wrote the thread")
	}

	th.Revision = 0
	if rev, err := s.PutThread(ctx, th); err != nil || rev != 1 {
		t.Fatalf("first save = %d, %v", rev, err)
	}
	path := filepath.Join(s.dir, threadsDir, "t.json")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	stale := th
	stale.Values = map[string]any{"n": 99.0}
	_, err = s.PutThread(ctx, stale) // still revision 0
	if errs.CodeOf(err) != errs.RevisionConflict || !errors.Is(err, errs.RevisionConflict) {
		t.Fatalf("stale save: %v, want revision_conflict", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatalf("a stale save changed the file:\n%s\nwas\n%s", after, before)
	}

	th.Revision = 1
	th.Values = map[string]any{"n": 2.0}
	if rev, err := s.PutThread(ctx, th); err != nil || rev != 2 {
		t.Fatalf("second save = %d, %v", rev, err)
	}
	got, _, _ := s.Thread(ctx, "t")
	if got.Revision != 2 || got.Values["n"] != 2.0 {
		t.Fatalf("loaded %+v", got)
	}
}

// TestRestartWhileWaiting is a sidecar that stops while a run waits for a
// decision: a new store on the same directory continues where it was.
func TestRestartWhileWaiting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	th := sampleThread("session-7f3a")
	th.Waiting = "run-9"
	cp := sampleCheckpoint("run-9", th.ID)
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	rev, err := s.PutThread(ctx, th)
	if err != nil {
		t.Fatal(err)
	}
	th.Revision = rev

	s2 := open(t, dir)
	gotTh, ok, err := s2.Thread(ctx, th.ID)
	if err != nil || !ok {
		t.Fatalf("thread after restart: ok %v, err %v", ok, err)
	}
	if !reflect.DeepEqual(gotTh, th) {
		t.Fatalf("thread after restart:\n got %#v\nwant %#v", gotTh, th)
	}
	gotCp, ok, err := s2.Run(ctx, gotTh.Waiting)
	if err != nil || !ok {
		t.Fatalf("run after restart: ok %v, err %v", ok, err)
	}
	if !reflect.DeepEqual(gotCp, cp) {
		t.Fatalf("run after restart:\n got %#v\nwant %#v", gotCp, cp)
	}
	// The revision carries over: the old base is stale, the loaded one wins.
	if _, err := s2.PutThread(ctx, run.Thread{ID: th.ID}); errs.CodeOf(err) != errs.RevisionConflict {
		t.Fatalf("save on revision 0 after restart: %v", err)
	}
	gotTh.Waiting = ""
	if rev, err := s2.PutThread(ctx, gotTh); err != nil || rev != th.Revision+1 {
		t.Fatalf("save after restart = %d, %v", rev, err)
	}
	if len(s2.Problems()) != 0 {
		t.Fatalf("problems: %v", s2.Problems())
	}
}

func TestOpenRemovesTempFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	if _, err := s.PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{"a": "old"}}); err != nil {
		t.Fatal(err)
	}
	// A crash after writing the temp file and before the rename leaves this.
	leftovers := []string{
		filepath.Join(dir, threadsDir, tempPrefix+"123456"),
		filepath.Join(dir, runsDir, tempPrefix+"99"),
	}
	for _, p := range leftovers {
		if err := os.WriteFile(p, []byte(`{"id":"t","values":{"a":"ha`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Reads ignore them.
	if got, ok, err := s.Thread(ctx, "t"); err != nil || !ok || got.Values["a"] != "old" {
		t.Fatalf("read beside a temp file: %+v %v %v", got, ok, err)
	}
	s2 := open(t, dir)
	for _, p := range leftovers {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
	if got, ok, err := s2.Thread(ctx, "t"); err != nil || !ok || got.Values["a"] != "old" || got.Revision != 1 {
		t.Fatalf("after reopen: %+v %v %v", got, ok, err)
	}
	if len(s.Problems())+len(s2.Problems()) != 0 {
		t.Fatal("a temp file was reported as a problem")
	}
}

func TestOpenCreatesPrivateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "store")
	open(t, dir)
	for _, d := range []string{dir, filepath.Join(dir, threadsDir), filepath.Join(dir, runsDir)} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v, want no group or other access", d, fi.Mode().Perm())
		}
	}
}

func TestCorruptThread(t *testing.T) {
	cases := []struct {
		name, content, errPart string
	}{
		{"garbage", "\x00\xffnot json at all", "invalid character"},
		{"torn", `{"id":"t","values":{"a":1`, "unexpected end"},
		{"empty", "", "unexpected end"},
		{"wrong type", `{"id":"t","values":5,"revision":3}`, "cannot unmarshal"},
		{"array", `[1,2,3]`, "cannot unmarshal"},
		{"null", `null`, `file holds id "", not "t"`},
		{"other id", `{"id":"u","values":{},"revision":3}`, `file holds id "u", not "t"`},
		{"trailing data", `{"id":"t","values":{},"revision":3} {}`, "invalid character"},
		{"number out of range", `{"id":"t","values":{"a":1e400},"revision":3}`, "cannot unmarshal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var logs bytes.Buffer
			s, err := Open(t.TempDir(), slog.New(slog.NewJSONHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(s.dir, threadsDir, "t.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}

			_, ok, err := s.Thread(ctx, "t")
			if err != nil || ok {
				t.Fatalf("Thread = ok %v, err %v; want a missing thread", ok, err)
			}
			ps := s.Problems()
			if len(ps) != 1 {
				t.Fatalf("problems = %v, want 1", ps)
			}
			p := ps[0]
			if p.Path != path || !strings.HasPrefix(p.SetAsidePath, path+".corrupt-") || p.At.IsZero() ||
				!strings.Contains(p.Err, tc.errPart) {
				t.Fatalf("problem = %+v", p)
			}
			if kept, err := os.ReadFile(p.SetAsidePath); err != nil || string(kept) != tc.content {
				t.Fatalf("set-aside file = %q, %v; want the original bytes", kept, err)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("corrupt file still in place: %v", err)
			}
			var rec map[string]any
			if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
				t.Fatalf("log %q: %v", logs.String(), err)
			}
			if rec["level"] != "ERROR" || rec["path"] != path || rec["set_aside"] != p.SetAsidePath || rec["err"] != p.Err {
				t.Fatalf("log = %v", rec)
			}

			// The thread starts over, and the problem is reported once.
			if rev, err := s.PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{"fresh": true}}); err != nil || rev != 1 {
				t.Fatalf("save after corruption = %d, %v", rev, err)
			}
			if got, ok, err := s.Thread(ctx, "t"); err != nil || !ok || got.Values["fresh"] != true {
				t.Fatalf("reload = %+v %v %v", got, ok, err)
			}
			if n := len(s.Problems()); n != 1 {
				t.Fatalf("%d problems after recovery", n)
			}
		})
	}
}

// A corrupt thread found by PutThread counts as missing: only a save on
// revision 0 goes through, and the bad bytes are kept.
func TestCorruptThreadFoundBySave(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	path := filepath.Join(s.dir, threadsDir, "t.json")
	if err := os.WriteFile(path, []byte("{{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutThread(ctx, run.Thread{ID: "t", Revision: 3}); errs.CodeOf(err) != errs.RevisionConflict {
		t.Fatalf("save on revision 3: %v", err)
	}
	if rev, err := s.PutThread(ctx, run.Thread{ID: "t"}); err != nil || rev != 1 {
		t.Fatalf("save on revision 0 = %d, %v", rev, err)
	}
	ps := s.Problems()
	if len(ps) != 1 {
		t.Fatalf("problems = %v", ps)
	}
	if kept, _ := os.ReadFile(ps[0].SetAsidePath); string(kept) != "{{" {
		t.Fatalf("set aside %q", kept)
	}
}

func TestCorruptRun(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	cp := sampleCheckpoint("r1", "t")
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	// A run file copied under another run's name is as wrong as garbage.
	src := filepath.Join(s.dir, runsDir, "r1.json")
	dst := filepath.Join(s.dir, runsDir, "r2.json")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Run(ctx, "r2"); ok || err != nil {
		t.Fatalf("Run(r2) = ok %v, err %v", ok, err)
	}
	ps := s.Problems()
	if len(ps) != 1 || ps[0].Path != dst || !strings.Contains(ps[0].Err, `"r1", not "r2"`) {
		t.Fatalf("problems = %+v", ps)
	}
	if got, ok, err := s.Run(ctx, "r1"); err != nil || !ok || !reflect.DeepEqual(got, cp) {
		t.Fatalf("r1 = %v %v", ok, err)
	}
}

// An I/O error is not corruption: the record may be fine, so it is neither
// set aside nor treated as missing (a save would overwrite it).
func TestReadErrorIsNotCorruption(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	path := filepath.Join(s.dir, threadsDir, "t.json")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Thread(ctx, "t"); err == nil {
		t.Fatal("no error reading a directory")
	}
	if _, err := s.PutThread(ctx, run.Thread{ID: "t"}); err == nil {
		t.Fatal("no error saving over an unreadable record")
	}
	if len(s.Problems()) != 0 {
		t.Fatalf("problems = %v", s.Problems())
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		t.Fatalf("the directory was moved: %v", err)
	}
}

func TestUnencodableValueWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	nan := 0.0
	nan /= nan
	if _, err := s.PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{"x": nan}}); err == nil {
		t.Fatal("NaN saved")
	}
	entries, _ := os.ReadDir(filepath.Join(s.dir, threadsDir))
	if len(entries) != 0 {
		t.Fatalf("files left: %v", entries)
	}
}

func TestIDsStayInside(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "store")
	s := open(t, dir)
	ids := []string{"../x", "../../escape", "a/b", `a\b`, "/abs", ".", "..", ".hidden", "", "Chat", "chat", "CHAT",
		"user@example.com/chat 1", "nul\x00byte", "é", strings.Repeat("long/", 100), strings.Repeat("long/", 100) + "x"}
	for i, id := range ids {
		if _, err := s.PutThread(ctx, run.Thread{ID: id, Values: map[string]any{"i": float64(i)}}); err != nil {
			t.Fatalf("%q: %v", id, err)
		}
	}
	// Each id has its own record (none overwrote another, whatever the case).
	for i, id := range ids {
		got, ok, err := s.Thread(ctx, id)
		if err != nil || !ok || got.ID != id || got.Values["i"] != float64(i) || got.Revision != 1 {
			t.Fatalf("%q: %+v %v %v", id, got, ok, err)
		}
	}
	// Nothing was written outside threads/ (but the store's lock file).
	var outside []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Dir(p) != filepath.Join(dir, threadsDir) && p != filepath.Join(dir, lockFile) {
			outside = append(outside, p)
		}
		return err
	})
	if len(outside) > 0 {
		t.Fatalf("files outside threads/: %v", outside)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, threadsDir))
	if len(entries) != len(ids) {
		t.Fatalf("%d files for %d ids", len(entries), len(ids))
	}
	if len(s.Problems()) != 0 {
		t.Fatalf("problems: %v", s.Problems())
	}
}

func TestInvalidUTF8ID(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	bad := "a\xffb"
	if _, err := s.PutThread(ctx, run.Thread{ID: bad}); errs.CodeOf(err) != errs.BadRequest {
		t.Fatalf("PutThread: %v", err)
	}
	if err := s.PutRun(ctx, run.Checkpoint{RunID: bad}); errs.CodeOf(err) != errs.BadRequest {
		t.Fatalf("PutRun: %v", err)
	}
	if _, ok, err := s.Thread(ctx, bad); ok || err != nil {
		t.Fatalf("Thread: %v %v", ok, err)
	}
	if _, ok, err := s.Run(ctx, bad); ok || err != nil {
		t.Fatalf("Run: %v %v", ok, err)
	}
	if err := s.DeleteRun(ctx, bad); err != nil {
		t.Fatalf("DeleteRun: %v", err)
	}
}

func TestCanceledContext(t *testing.T) {
	s := open(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.PutThread(ctx, run.Thread{ID: "t"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("PutThread: %v", err)
	}
	if _, _, err := s.Thread(ctx, "t"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Thread: %v", err)
	}
	if err := s.PutRun(ctx, run.Checkpoint{RunID: "r"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("PutRun: %v", err)
	}
	if _, _, err := s.Run(ctx, "r"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if err := s.DeleteRun(ctx, "r"); !errors.Is(err, context.Canceled) {
		t.Fatalf("DeleteRun: %v", err)
	}
}

func TestConcurrentSameBase(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	base, err := s.PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	const n, readers = 32, 4
	var wg sync.WaitGroup
	// Room for every send: a reader that fails must report, not block
	// (which would hang the test instead of failing it).
	errc := make(chan error, n+readers)
	for i := range n {
		wg.Go(func() {
			_, err := s.PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{"by": float64(i)}, Revision: base})
			errc <- err
		})
	}
	// Readers racing the writers never see a torn record.
	for range readers {
		wg.Go(func() {
			for range 20 {
				if _, ok, err := s.Thread(ctx, "t"); err != nil || !ok {
					errc <- fmt.Errorf("reader: ok %v, err %v", ok, err)
					return
				}
			}
		})
	}
	waitAll(t, &wg)
	close(errc)
	wins := 0
	for err := range errc {
		switch {
		case err == nil:
			wins++
		case errs.CodeOf(err) != errs.RevisionConflict:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d saves won on one base, want 1", wins)
	}
	got, _, _ := s.Thread(ctx, "t")
	if got.Revision != base+1 {
		t.Fatalf("revision %d, want %d", got.Revision, base+1)
	}
	if len(s.Problems()) != 0 {
		t.Fatalf("problems: %v", s.Problems())
	}
}

func TestConcurrentDifferentIDs(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	const n, saves = 16, 5
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("thread-%d", i)
			var rev uint64
			for j := range saves {
				var err error
				rev, err = s.PutThread(ctx, run.Thread{ID: id, Values: map[string]any{"j": float64(j)}, Revision: rev})
				if err != nil {
					errc <- err
					return
				}
				if err := s.PutRun(ctx, sampleCheckpoint(id+"-run", id)); err != nil {
					errc <- err
					return
				}
			}
			errc <- s.DeleteRun(ctx, id+"-run")
		})
	}
	waitAll(t, &wg)
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		got, ok, err := s.Thread(ctx, fmt.Sprintf("thread-%d", i))
		if err != nil || !ok || got.Revision != saves || got.Values["j"] != float64(saves-1) {
			t.Fatalf("thread %d: %+v %v %v", i, got, ok, err)
		}
	}
	if len(s.locks.m) != 0 {
		t.Fatalf("%d record locks kept after all work ended", len(s.locks.m))
	}
}
