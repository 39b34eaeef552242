package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// logStore is a run.RunLog that keeps each run as JSON: a base and the
// deltas appended since, applied on read, as a database would keep rows.
// Threads live in a memory store.
type logStore struct {
	*run.MemoryStore
	mu      sync.Mutex
	base    map[string][]byte
	deltas  map[string][][]byte
	seq     map[string]uint64
	puts    int
	appends int
}

func newLogStore() *logStore {
	return &logStore{MemoryStore: run.NewMemoryStore(), base: map[string][]byte{}, deltas: map[string][][]byte{},
		seq: map[string]uint64{}}
}

func (l *logStore) Run(_ context.Context, id string) (run.Checkpoint, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.read(id)
}

func (l *logStore) read(id string) (run.Checkpoint, bool, error) {
	b, ok := l.base[id]
	if !ok {
		return run.Checkpoint{}, false, nil
	}
	var cp run.Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return cp, false, err
	}
	for _, db := range l.deltas[id] {
		var d run.Delta
		if err := json.Unmarshal(db, &d); err != nil {
			return cp, false, err
		}
		if err := cp.Apply(d); err != nil {
			return cp, false, err
		}
	}
	return cp, true, nil
}

func (l *logStore) PutRun(_ context.Context, cp run.Checkpoint) error {
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.base[cp.RunID], l.deltas[cp.RunID], l.seq[cp.RunID] = b, nil, cp.Seq
	l.puts++
	return nil
}

func (l *logStore) DeleteRun(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.base, id)
	delete(l.deltas, id)
	delete(l.seq, id)
	return nil
}

func (l *logStore) AppendRun(_ context.Context, d run.Delta) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq, ok := l.seq[d.RunID]; !ok || seq != d.Base {
		return errs.New(errs.RevisionConflict, "run %q is at save %d, not %d", d.RunID, seq, d.Base)
	}
	l.deltas[d.RunID] = append(l.deltas[d.RunID], b)
	l.seq[d.RunID] = d.Base + 1
	l.appends++
	return nil
}

func (l *logStore) counts() (puts, appends int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.puts, l.appends
}

// normal is v through JSON, for comparing what a store gives back.
func normal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(x, "", " ")
	return string(out)
}

// firstDiff shows where two texts part.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  saved:   %s\n  session: %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(al), len(bl))
}

// modelPlugins write run and thread state as calls go: counters, a list
// that grows, a thread value set and removed, context messages and tool
// filters; the gate decides by the call's "d" argument.
func modelPlugins(rng *rand.Rand) []plugin.Plugin {
	return []plugin.Plugin{
		keys("m",
			state.Spec{Name: "m.count", Scope: state.ScopeRun, Reducer: "add"},
			state.Spec{Name: "m.seen", Scope: state.ScopeRun, Reducer: "append"},
			state.Spec{Name: "m.last", Scope: state.ScopeThread},
			state.Spec{Name: "m.total", Scope: state.ScopeThread, Reducer: "add"},
			state.Spec{Name: "m.scratch", Scope: state.ScopeRun, Transient: true},
		),
		hook("steps", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("m.count", 1)
			switch rng.IntN(4) {
			case 0:
				out.Schedule(run.ActionAddContextMessage, map[string]any{"key": fmt.Sprint("k", rng.IntN(3)), "content": "note",
					"kind": []string{"ephemeral", "persistent"}[rng.IntN(2)]})
			case 1:
				out.Schedule(run.ActionExcludeTool, "b")
			}
			return nil
		}),
		hook("results", phase.AfterToolExecute, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("m.seen", in.Tool.Call.ID)
			out.Update("m.total", 1)
			out.Update("m.scratch", in.Tool.Call.ID)
			if rng.IntN(3) == 0 {
				out.Update("m.last", nil)
			} else {
				out.Update("m.last", in.Tool.Call.ID)
			}
			return nil
		}),
		plugin.New("tools", func(r *plugin.Registrar) error { return r.Tool(newTool("c", nil), errs.Pos{}) }),
		gateFn("gate", func(in *plugin.Input) gate.Decision {
			if in.Tool.Resume != nil {
				return gate.Decision{}
			}
			switch in.Tool.Call.Args["d"] {
			case "block":
				return gate.Decision{Kind: gate.Block, Reason: "no"}
			case "suspend":
				return gate.Decision{Kind: gate.Suspend, Ticket: &gate.Ticket{Message: "ok?"}}
			case "answer":
				r := model.Success(map[string]any{"answer": strings.Repeat("a", 300)})
				return gate.Decision{Kind: gate.SetResult, Result: &r}
			case "rewrite":
				return gate.Decision{Args: map[string]any{"d": "rewritten", "pad": in.Tool.Call.Args["pad"]}}
			}
			return gate.Decision{}
		}),
	}
}

// modelDriver drives a session with random phase calls, most of them in
// order, some refused, and saves it after each as a sidecar does.
type modelDriver struct {
	t     *testing.T
	ctx   context.Context
	rng   *rand.Rand
	rt    *run.Runtime
	st    run.Store
	s     *run.Session
	pad   int // the largest payload of a call's arguments
	calls int // call ids made so far
	ran   int // plugin tools run
	// whole counts the saves that must be whole: after a start or a
	// restore, and a run that begins to wait (the session saves it).
	whole int
}

var modelDecisions = []string{"allow", "allow", "allow", "block", "suspend", "answer", "rewrite"}

func (m *modelDriver) newCall() model.ToolCall {
	m.calls++
	name := []string{"a", "b", "c", "x"}[m.rng.IntN(4)]
	// Large arguments make the file store's log outgrow its base.
	return model.ToolCall{ID: fmt.Sprint("c", m.calls), Name: name,
		Args: map[string]any{"d": modelDecisions[m.rng.IntN(len(modelDecisions))], "pad": strings.Repeat("p", m.rng.IntN(m.pad+1))}}
}

// someCall picks a call of the step, mostly one that fits (when fit is
// not nil and some call does), sometimes any or one the model never made.
func (m *modelDriver) someCall(fit func(c run.CallRecord) bool) model.ToolCall {
	cs := m.s.Calls()
	if len(cs) == 0 || m.rng.IntN(10) == 0 {
		return model.ToolCall{ID: "nope", Name: "a"}
	}
	if fit != nil && m.rng.IntN(5) > 0 {
		var fits []run.CallRecord
		for _, c := range cs {
			if fit(c) {
				fits = append(fits, c)
			}
		}
		if len(fits) > 0 {
			cs = fits
		}
	}
	return cs[m.rng.IntN(len(cs))].Call
}

func allowed(c run.CallRecord) bool {
	return c.Status == run.CallRunning && c.Gate != nil && c.Gate.Decision == gate.Allow && !c.Started
}

func started(c run.CallRecord) bool { return c.Status == run.CallRunning && c.Started }

func answered(c run.CallRecord) bool {
	return c.Status == run.CallRunning && (c.Started || (c.Gate != nil && c.Gate.Result != nil))
}

func (m *modelDriver) start() {
	host := []model.ToolSpec{{Name: "a", Parameters: map[string]any{"type": "object"}}, {Name: "b"}}
	s, _, err := m.rt.Start(m.ctx, run.StartOptions{ThreadID: "T", Tools: host,
		Messages: []model.Message{{Role: model.RoleUser, Content: "go"}}})
	if err != nil {
		m.t.Fatal(err)
	}
	m.s = s
	m.whole++
	if err := s.SaveRun(m.ctx); err != nil { // a sidecar saves a new run
		m.t.Fatal(err)
	}
}

// step makes one random call on the session and returns its name.
func (m *modelDriver) step() string {
	ctx, s, rng := m.ctx, m.s, m.rng
	// The host's a, a b that is not the host's, and a tool of the step's
	// own: each way a checkpoint keeps a step tool.
	tools := []model.ToolSpec{s.HostTools()[0], {Name: "b", Description: "not the host's b"},
		{Name: "c", Parameters: map[string]any{"type": "object"}}}
	if rng.IntN(4) == 0 {
		s.SetCwd([]string{"", "/w/a", "/w/b"}[rng.IntN(3)]) // as an agent's event reports it
	}
	op := rng.IntN(15)
	switch op {
	case 0:
		s.StepStart(ctx)
		return "step_start"
	case 1:
		req := model.Request{Tools: []model.ToolSpec{}} // an empty list offers no tool
		for _, t := range tools {
			if rng.IntN(5) > 0 {
				req.Tools = append(req.Tools, t)
			}
		}
		if rng.IntN(3) == 0 {
			req.Messages = []model.Message{{Role: model.RoleUser, Content: fmt.Sprint("replaced ", rng.IntN(100))}}
		}
		s.BeforeInference(ctx, req)
		return "before_inference"
	case 2:
		var resp model.Response
		for range rng.IntN(7) {
			resp.ToolCalls = append(resp.ToolCalls, m.newCall())
		}
		resp.Text = "thinking"
		s.AfterInference(ctx, resp)
		return "after_inference"
	case 3:
		s.AnnounceCall(ctx, m.newCall())
		return "announce"
	case 4, 5, 6:
		s.ToolGate(ctx, m.someCall(func(c run.CallRecord) bool { return c.Gate == nil || c.Status == run.CallResuming }))
		return "tool_gate"
	case 7:
		s.BeforeToolExecute(ctx, m.someCall(allowed))
		return "before_tool_execute"
	case 8, 9:
		status := []string{model.StatusSuccess, model.StatusSuccess, model.StatusError, model.StatusPending}[rng.IntN(4)]
		data := map[string]any{"out": strings.Repeat("o", rng.IntN(500))}
		if status == model.StatusPending {
			data = map[string]any{"message": strings.Repeat("o", rng.IntN(500))} // a ticket
		}
		s.AfterToolExecute(ctx, m.someCall(answered), model.ToolResult{Status: status, Data: data})
		return "after_tool_execute"
	case 10:
		before := s.Status()
		s.StepEnd(ctx)
		if before != run.Waiting && s.Status() == run.Waiting {
			m.whole++ // saved whole by the session
		}
		return "step_end"
	case 11:
		var ds []run.ResumeDecision
		for _, c := range s.Calls() {
			if c.Status == run.CallSuspended && rng.IntN(3) > 0 {
				ds = append(ds, run.ResumeDecision{Target: c.Call.ID, Action: []string{"resume", "cancel"}[rng.IntN(2)], Result: "yes"})
			}
		}
		s.Resume(ctx, ds)
		return "resume"
	case 12:
		if rng.IntN(4) == 0 {
			s.Cancel(ctx, "bored")
			return "cancel"
		}
		s.RunEnd(ctx)
		return "run_end"
	case 13:
		if _, ran := s.RunPluginTool(ctx, m.someCall(started).ID); ran {
			m.ran++
		}
		return "run_plugin_tool"
	default:
		r, err := m.rt.Restore(ctx, s.RunID(), nil)
		if err != nil {
			m.t.Fatalf("restore: %v", err)
		}
		// The restored session is the run as saved, what a session
		// holds besides its state (the step's tools) included.
		saved, _, err := m.st.Run(ctx, s.RunID())
		if err != nil {
			m.t.Fatal(err)
		}
		if a, b := normal(m.t, saved), normal(m.t, r.Checkpoint()); a != b {
			m.t.Fatalf("the restored session differs from its save: %s", firstDiff(a, b))
		}
		m.s = r
		m.whole++
		return "restore"
	}
}

// check saves the session as a sidecar does and compares what the store
// gives back with the session's own checkpoint.
func (m *modelDriver) check(i int, op string) {
	t := m.t
	if m.s.Status() == run.Done {
		if err := m.s.SaveRun(m.ctx); err != nil { // saves nothing
			t.Fatal(err)
		}
		if _, ok, err := m.st.Run(m.ctx, m.s.RunID()); ok || err != nil {
			t.Fatalf("op %d (%s): a finished run is still saved: %v", i, op, err)
		}
		m.start()
		return
	}
	if err := m.s.SaveRun(m.ctx); err != nil {
		t.Fatalf("op %d (%s): save: %v", i, op, err)
	}
	got, ok, err := m.st.Run(m.ctx, m.s.RunID())
	if err != nil || !ok {
		t.Fatalf("op %d (%s): read back: %v %v", i, op, ok, err)
	}
	want := m.s.Checkpoint()
	if g, w := normal(t, got), normal(t, want); g != w {
		t.Fatalf("op %d (%s): the saved run differs from the session: %s", i, op, firstDiff(g, w))
	}
}

// Restoring a run from its base and deltas gives what the session itself
// would save whole, after any sequence of calls (in order or refused,
// restores, waits, resumes, ends): checked after every call on random
// sequences, with a store that keeps deltas as JSON rows and with the file
// store (whose log is compacted on the way). A save is whole only when it
// must be (after a start, a restore, or the session's own save of a run
// that begins to wait); every other save is a delta.
func TestSaveRunRestoresTheSession(t *testing.T) {
	for _, kind := range []string{"rows", "file"} {
		t.Run(kind, func(t *testing.T) {
			compacted, ran := 0, 0
			seeds := uint64(6)
			if kind == "file" {
				seeds = 4 // each save fsyncs
			}
			for seed := range seeds {
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(seed, 7))
				var st run.Store
				rows := newLogStore()
				dir := t.TempDir()
				if kind == "rows" {
					st = rows
				} else {
					st = fileStore(t, dir)
				}
				rt := newRuntime(t, []run.Option{run.WithStore(st)}, modelPlugins(rng)...)
				m := &modelDriver{t: t, ctx: ctx, rng: rng, rt: rt, st: st, pad: 20}
				if kind == "file" {
					m.pad = 2000 // so that logs outgrow compactMin
				}
				m.start()
				var logSize int64
				for i := range 300 {
					op := m.step()
					m.check(i, op)
					if kind == "rows" {
						if puts, _ := rows.counts(); puts != m.whole {
							t.Fatalf("seed %d op %d (%s): %d whole saves, want %d", seed, i, op, puts, m.whole)
						}
						continue
					}
					fi, err := os.Stat(filepath.Join(dir, "runs", m.s.RunID()+".log"))
					size := int64(0)
					if err == nil {
						size = fi.Size()
					}
					if size < logSize && op != "restore" && op != "step_end" {
						compacted++
					}
					logSize = size
				}
				ran += m.ran
				if kind == "rows" {
					if _, appends := rows.counts(); appends < 150 { // of 300
						t.Fatalf("seed %d: only %d of 300 saves were deltas", seed, appends)
					}
				}
			}
			if ran == 0 {
				t.Fatal("no plugin tool ran: the sequences miss RunPluginTool")
			}
			if kind == "file" && compacted == 0 {
				t.Fatal("the file store never compacted a log")
			}
		})
	}
}

// Apply refuses a delta for another run or another save, and one that
// does not fit the checkpoint, and then changes nothing.
func TestApplyRefuses(t *testing.T) {
	base := func() run.Checkpoint {
		return run.Checkpoint{RunID: "r", Seq: 3, Step: 1, Values: map[string]any{"k": 1.0},
			Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}},
			Calls:    []run.CallRecord{{Call: model.ToolCall{ID: "c1", Name: "a"}, Status: run.CallNew}}}
	}
	ok := run.Delta{RunID: "r", Base: 3, Step: 2, MessagesFrom: 1, CallCount: 2,
		Calls: []run.CallChange{{Index: 1, Record: run.CallRecord{Call: model.ToolCall{ID: "c2"}, Status: run.CallNew}}}}
	for _, tc := range []struct {
		name     string
		change   func(d *run.Delta)
		conflict bool
	}{
		{"another run", func(d *run.Delta) { d.RunID = "q" }, true},
		{"an older save", func(d *run.Delta) { d.Base = 2 }, true},
		{"a later save", func(d *run.Delta) { d.Base = 4 }, true},
		{"messages past the end", func(d *run.Delta) { d.MessagesFrom = 2 }, false},
		{"negative messages", func(d *run.Delta) { d.MessagesFrom = -1 }, false},
		{"a new call without its record", func(d *run.Delta) { d.CallCount = 3 }, false},
		{"a call past the count", func(d *run.Delta) { d.Calls[0].Index = 2 }, false},
		{"a huge count", func(d *run.Delta) { d.CallCount = 1 << 40 }, false},
		{"tool calls over a value that is no map", func(d *run.Delta) {
			d.Values = map[string]any{run.KeyToolCalls: "x"}
			d.ToolCalls = map[string]any{"c1": map[string]any{}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ok
			d.Calls = append([]run.CallChange(nil), ok.Calls...)
			tc.change(&d)
			cp := base()
			err := cp.Apply(d)
			if err == nil {
				t.Fatal("applied")
			}
			if got := errs.CodeOf(err) == errs.RevisionConflict; got != tc.conflict {
				t.Fatalf("%v: revision_conflict %v, want %v", err, got, tc.conflict)
			}
			if normal(t, cp) != normal(t, base()) {
				t.Fatalf("a refused delta changed the checkpoint: %+v", cp)
			}
		})
	}
	cp := base()
	if err := cp.Apply(ok); err != nil {
		t.Fatal(err)
	}
	if cp.Seq != 4 || cp.Step != 2 || len(cp.Calls) != 2 || cp.Calls[1].Call.ID != "c2" || len(cp.Messages) != 1 {
		t.Fatalf("applied: %+v", cp)
	}
}

// A session's delta builds on the save it made: when the store holds
// another save of the run (another process saved it), the delta is
// revision_conflict and the store keeps the other save; the session's
// next save is whole.
func TestSaveRunOnAnotherSaveConflicts(t *testing.T) {
	ctx := context.Background()
	st := newLogStore()
	rt := newRuntime(t, []run.Option{run.WithStore(st)}, counting(phase.StepStart)...)
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRun(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := rt.Restore(ctx, s.RunID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.SaveRun(ctx); err != nil {
		t.Fatal(err)
	}
	saved := st.base[s.RunID()]
	if _, err := s.StepStart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRun(ctx); errs.CodeOf(err) != errs.RevisionConflict {
		t.Fatalf("a delta on another process's save: %v, want revision_conflict", err)
	}
	if !bytes.Equal(st.base[s.RunID()], saved) || len(st.deltas[s.RunID()]) != 0 {
		t.Fatal("the refused delta changed the store")
	}
	puts, _ := st.counts()
	if err := s.SaveRun(ctx); err != nil {
		t.Fatal(err)
	}
	if now, _ := st.counts(); now != puts+1 {
		t.Fatalf("the save after a conflict was not whole (%d whole saves, %d before)", now, puts)
	}
}

// A step that offers no tool offers none after a restore too: an empty
// list of offered tools is not "every tool" (it came back as nil, which
// is, so a restored run gated a call to a tool the step never offered).
func TestRestoreKeepsAnEmptyOffer(t *testing.T) {
	for _, kind := range []string{"memory", "file"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			var st run.Store = run.NewMemoryStore()
			if kind == "file" {
				st = fileStore(t, t.TempDir())
			}
			rt := newRuntime(t, []run.Option{run.WithStore(st)})
			s, _, err := rt.Start(ctx, run.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.StepStart(ctx); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.BeforeInference(ctx, model.Request{}); err != nil {
				t.Fatal(err)
			}
			c := model.ToolCall{ID: "c1", Name: "a", Args: map[string]any{}}
			if _, err := s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{c}}); err != nil {
				t.Fatal(err)
			}
			if err := st.PutRun(ctx, s.Checkpoint()); err != nil {
				t.Fatal(err)
			}
			r, err := rt.Restore(ctx, s.RunID(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for name, sess := range map[string]*run.Session{"restored": r, "original": s} {
				d, _, err := sess.ToolGate(ctx, c)
				if err != nil || d.Decision != gate.SetResult || d.Result == nil || !strings.Contains(d.Result.Message, "not available") {
					t.Fatalf("%s: a call to a tool the step did not offer: %+v %v", name, d, err)
				}
			}
		})
	}
}
