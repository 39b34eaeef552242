package run_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/store/filestore"
)

// limitedRuntime is newRuntime with state limits (zero: the defaults) over
// a store.
func limitedRuntime(t testing.TB, lim state.Limits, st run.Store, plugins ...plugin.Plugin) *run.Runtime {
	t.Helper()
	set, err := run.NewSet(plugins...)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	rt, err := run.New(engine.New(set, engine.WithStateLimits(lim)), run.WithStore(st),
		run.WithAgents(run.Agent{ID: "default", MaxSteps: 5}),
		run.WithIDs(func(p string) string { return fmt.Sprintf("%s%d", p, n.Add(1)) }))
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// feeder appends 300,000 bytes to the key big.log at every step_start: the
// 4th append passes the default max_value_size of 1 MiB (3 items encode to
// 900,010 bytes, 4 to 1,200,013).
func feeder(scope state.Scope) []plugin.Plugin {
	item := strings.Repeat("x", 300_000)
	return []plugin.Plugin{
		keys("big", state.Spec{Name: "big.log", Scope: scope, Reducer: "append"}),
		hook("feeder", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("big.log", item)
			return nil
		}),
	}
}

// busy is a model that always calls ls.
var busy = model.ModelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
	return calls(call("ls", nil)), nil
})

func openFileStore(t *testing.T, dir string) *filestore.Store {
	t.Helper()
	fs, err := filestore.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func wantStateTooLarge(t *testing.T, err error, stored bool) {
	t.Helper()
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.StateTooLarge || e.Key != "big.log" || !strings.Contains(e.Msg, "max_value_size") {
		t.Fatalf("err = %v, want state_too_large naming big.log and max_value_size", err)
	}
	if !stored && e.Plugin != "feeder" {
		t.Fatalf("the error must name the plugin that wrote: %v", err)
	}
	if stored != strings.Contains(e.Msg, "stored") {
		t.Fatalf("stored = %v: %v", stored, err)
	}
}

func itemsOf(t *testing.T, fs run.Store, thread string) int {
	t.Helper()
	th, ok, err := fs.Thread(context.Background(), thread)
	if err != nil || !ok {
		t.Fatalf("thread %s: %v %v", thread, ok, err)
	}
	l, _ := th.Values["big.log"].([]any)
	return len(l)
}

// TestStateTooLargeFailsTheSameWayAfterARestart: a thread key fed a large
// value at every step fails the run with state_too_large once it passes
// max_value_size, keeping what was committed before; after a restart (the
// file store reopened) a retry on the thread fails the same way at once;
// and a thread saved under larger limits is refused with state_too_large
// instead of loaded.
func TestStateTooLargeFailsTheSameWayAfterARestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	req := func(thread string) run.Request {
		return run.Request{ThreadID: thread, Prompt: "go", Model: busy, Tools: []plugin.Tool{newTool("ls", nil)}}
	}

	rt := limitedRuntime(t, state.Limits{}, openFileStore(t, dir), feeder(state.ScopeThread)...)
	res, err := rt.Run(ctx, req("T"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination != "error:state_too_large" || res.Steps != 4 {
		t.Fatalf("termination %q after %d steps, want error:state_too_large at step 4", res.Termination, res.Steps)
	}
	wantStateTooLarge(t, res.Err, false)

	// A restart: a new file store on the same directory, a new runtime.
	fs := openFileStore(t, dir)
	if n := itemsOf(t, fs, "T"); n != 3 {
		t.Fatalf("the thread holds %d items, want the 3 committed before the failure", n)
	}
	rt = limitedRuntime(t, state.Limits{}, fs, feeder(state.ScopeThread)...)
	res, err = rt.Run(ctx, req("T"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination != "error:state_too_large" || res.Steps != 1 {
		t.Fatalf("the retry: termination %q after %d steps, want error:state_too_large at step 1", res.Termination, res.Steps)
	}
	wantStateTooLarge(t, res.Err, false)
	if n := itemsOf(t, fs, "T"); n != 3 {
		t.Fatalf("the retry left %d items, want 3", n)
	}

	// Under a larger limit the thread grows past the default one...
	rt = limitedRuntime(t, state.Limits{MaxValue: 4 << 20}, fs, feeder(state.ScopeThread)...)
	if res, err := rt.Run(ctx, req("U")); err != nil || res.Termination != "stopped:max_steps" {
		t.Fatalf("%q %v", res.Termination, err)
	}
	before, _, _ := fs.Thread(ctx, "U")
	// ...and after a restart with the default limits it is refused, not
	// loaded, and left as it was.
	fs = openFileStore(t, dir)
	rt = limitedRuntime(t, state.Limits{}, fs, feeder(state.ScopeThread)...)
	_, err = rt.Run(ctx, req("U"))
	wantStateTooLarge(t, err, true)
	if after, _, _ := fs.Thread(ctx, "U"); after.Revision != before.Revision || itemsOf(t, fs, "U") != 5 {
		t.Fatalf("the refused thread changed: revision %d -> %d", before.Revision, after.Revision)
	}
}

// TestStateTooLargeRetryOfACheckpointedRun is the sidecar's case: a run
// checkpointed between phases, restored after a restart, fails its next
// phase with state_too_large; a checkpoint saved under larger limits is
// refused when restored.
func TestStateTooLargeRetryOfACheckpointedRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	step := func(s *run.Session) error {
		if _, err := s.StepStart(ctx); err != nil {
			return err
		}
		s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "ls"}}})
		s.AfterInference(ctx, calls(call("ls", nil)))
		s.ToolGate(ctx, model.ToolCall{ID: s.Calls()[0].Call.ID})
		s.BeforeToolExecute(ctx, s.Calls()[0].Call)
		s.AfterToolExecute(ctx, s.Calls()[0].Call, model.Success("ok"))
		_, err := s.StepEnd(ctx)
		return err
	}
	checkpointed := func(lim state.Limits, steps int) string {
		fs := openFileStore(t, dir)
		rt := limitedRuntime(t, lim, fs, feeder(state.ScopeRun)...)
		s, _, err := rt.Start(ctx, run.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for range steps {
			if err := step(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := fs.PutRun(ctx, s.Checkpoint()); err != nil {
			t.Fatal(err)
		}
		return s.RunID()
	}
	id := checkpointed(state.Limits{}, 3)
	rt := limitedRuntime(t, state.Limits{}, openFileStore(t, dir), feeder(state.ScopeRun)...)
	s, err := rt.Restore(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.StepStart(ctx)
	wantStateTooLarge(t, err, false)
	if l, _ := s.State()["big.log"].([]any); s.Termination() != "error:state_too_large" || len(l) != 3 {
		t.Fatalf("termination %q, %d items", s.Termination(), len(l))
	}

	id = checkpointed(state.Limits{MaxValue: 4 << 20}, 4)
	rt = limitedRuntime(t, state.Limits{}, openFileStore(t, dir), feeder(state.ScopeRun)...)
	_, err = rt.Restore(ctx, id, nil)
	wantStateTooLarge(t, err, true)
}

// TestStateSizeIsTracked checks, after every phase of a run with calls,
// results and tickets, that the size the store keeps for each key is the
// length of its value encoded as JSON, and the state's size their sum.
func TestStateSizeIsTracked(t *testing.T) {
	ctx := context.Background()
	rewriter := gateFn("rw", func(in *plugin.Input) gate.Decision {
		if i, _ := in.Tool.Call.Args["i"].(float64); int(i)%3 == 0 && in.Tool.Call.Args["safe"] == nil {
			return gate.Decision{Kind: gate.Rewrite, Args: map[string]any{"safe": true, "i": i, "pad": strings.Repeat("p", int(i))}}
		}
		return gate.Decision{}
	})
	rt := newRuntime(t, nil, approver("ask"), rewriter, keys("k", state.Spec{Name: "k.log", Reducer: "append"}),
		hook("log", phase.AfterToolExecute, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("k.log", map[string]any{"call": in.Tool.Call.ID, "res": in.Tool.Result.Data})
			return nil
		}))
	s, _, err := rt.Start(ctx, run.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(where string) {
		t.Helper()
		snap := s.Snapshot()
		total := 0
		for _, k := range snap.Registry().Keys() {
			if !snap.Has(k) {
				continue
			}
			b, err := value.AppendJSON(nil, snap.Get(k))
			if err != nil {
				t.Fatal(err)
			}
			if snap.SizeOf(k) != len(b) {
				t.Fatalf("%s: key %s: size %d, want %d (%.200s)", where, k.Name, snap.SizeOf(k), len(b), b)
			}
			total += len(b)
		}
		if snap.Size() != total {
			t.Fatalf("%s: state size %d, want %d", where, snap.Size(), total)
		}
	}
	check("run_start")
	s.StepStart(ctx)
	s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "ls"}, {Name: "deploy"}}})
	var cs []model.ToolCall
	for i := range 40 {
		cs = append(cs, model.ToolCall{ID: fmt.Sprintf("c%d<é>", i), Name: "ls", Args: map[string]any{"i": i, "s": "\u2028\"x"}})
	}
	cs = append(cs, model.ToolCall{ID: "d", Name: "deploy"})
	if _, err := s.AfterInference(ctx, calls(cs...)); err != nil {
		t.Fatal(err)
	}
	check("after_inference")
	for i, c := range cs {
		s.ToolGate(ctx, c)
		check("tool_gate " + c.ID)
		if c.Name == "deploy" {
			continue
		}
		s.BeforeToolExecute(ctx, c)
		if _, _, err := s.AfterToolExecute(ctx, c, model.Success(map[string]any{"n": float64(i) / 3})); err != nil {
			t.Fatal(err)
		}
		check("after_tool_execute " + c.ID)
	}
	s.StepEnd(ctx)
	check("step_end")
	if _, _, err := s.Resume(ctx, []run.ResumeDecision{{Target: "d", Action: "cancel"}}); err != nil {
		t.Fatal(err)
	}
	check("resume")
}

// TestStepCostGrowsLinearly runs one step with n tool calls through the
// Session API for two sizes of n: the bytes allocated per call must not
// grow with n (a copy of the step's records per call made them grow
// tenfold). Speed itself is measured by BenchmarkStepCalls.
func TestStepCostGrowsLinearly(t *testing.T) {
	perCall := func(n int) float64 {
		ctx := context.Background()
		rt := newRuntime(t, []run.Option{run.WithAgents(run.Agent{ID: "default", MaxSteps: 10})})
		s, _, err := rt.Start(ctx, run.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		resp := model.Response{}
		for i := range n {
			resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "ls", Args: map[string]any{"i": i}})
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s.StepStart(ctx)
		s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "ls"}}})
		if _, err := s.AfterInference(ctx, resp); err != nil {
			t.Fatal(err)
		}
		for _, c := range resp.ToolCalls {
			s.ToolGate(ctx, c)
			s.BeforeToolExecute(ctx, c)
			if _, _, err := s.AfterToolExecute(ctx, c, model.Success("ok")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.StepEnd(ctx); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
	}
	small, large := perCall(200), perCall(2000)
	if large > 2*small {
		t.Fatalf("a step allocates %.0f bytes per call with 2000 calls, %.0f with 200: the cost per call grows with the number of calls", large, small)
	}
}
