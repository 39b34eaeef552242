package run_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/run"
)

// toolsGate blocks a call when the step's tools (ctx.tools) are empty and
// keeps what it saw for each call, as JSON.
type toolsGate struct {
	mu   sync.Mutex
	seen map[string]string
}

func (g *toolsGate) plugin(t *testing.T) plugin.Plugin {
	g.seen = map[string]string{}
	return gateFn("g", func(in *plugin.Input) gate.Decision {
		g.mu.Lock()
		g.seen[in.Tool.Call.ID] = normal(t, in.Tools)
		g.mu.Unlock()
		if len(in.Tools) == 0 {
			return gate.Decision{Kind: gate.Block, Reason: "no tools seen"}
		}
		return gate.Decision{}
	})
}

func (g *toolsGate) saw(id string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seen[id]
}

// searchTool is a transform that offers the host's first tool and a tool
// of its own in place of the others (as deferred_tools offers ToolSearch).
func searchTool() plugin.Plugin {
	return plugin.New("search", func(r *plugin.Registrar) error {
		return r.Transform(plugin.RequestTransformFunc(func(ctx context.Context, in *plugin.Input, req model.Request) (model.Request, error) {
			if len(req.Tools) == 0 {
				return req, nil
			}
			req.Tools = []model.ToolSpec{req.Tools[0], {Name: "search", Description: "finds tools",
				Parameters: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}}
			return req, nil
		}), errs.Pos{})
	})
}

var schemaTools = []model.ToolSpec{
	{Name: "a", Description: "tool a", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}},
	{Name: "b", Description: "tool b", Parameters: map[string]any{"type": "object"}},
}

// A run restored from its checkpoint sees the step's tools (ctx.tools) the
// saved run saw, so a gate that reads them decides the same: with every
// store, whether the tools reached the store in a delta (the file store's
// log) or whole, and whether they are the host's tools, tools the host
// sent for the step, or a transform's. (They were lost: a restored run saw
// none, and such a gate allowed c1 but blocked c2.)
func TestRestoredRunKeepsStepTools(t *testing.T) {
	for _, tc := range []struct {
		name  string
		host  []model.ToolSpec // StartOptions.Tools
		req   []model.ToolSpec // before_inference's tools; nil: the host's
		extra []plugin.Plugin
	}{
		{name: "the step's own tools", req: []model.ToolSpec{{Name: "a"}, {Name: "b"}}},
		{name: "the host's tools", host: schemaTools},
		{name: "a transform's tools", host: schemaTools, extra: []plugin.Plugin{searchTool()}},
		{name: "tools the host sends besides its own", host: schemaTools,
			req: []model.ToolSpec{schemaTools[1], {Name: "a", Description: "another a"}}},
	} {
		for _, kind := range []string{"memory", "file", "rows"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				ctx := context.Background()
				dir := t.TempDir()
				var st run.Store
				rows := newLogStore()
				switch kind {
				case "memory":
					st = run.NewMemoryStore()
				case "file":
					st = fileStore(t, dir)
				case "rows":
					st = rows
				}
				g := &toolsGate{}
				rt := newRuntime(t, []run.Option{run.WithStore(st)}, append(tc.extra, g.plugin(t))...)
				s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T", Tools: tc.host,
					Messages: []model.Message{{Role: model.RoleUser, Content: "go"}}})
				if err != nil {
					t.Fatal(err)
				}
				save := func() {
					t.Helper()
					if err := s.SaveRun(ctx); err != nil {
						t.Fatal(err)
					}
				}
				save()
				if _, err := s.StepStart(ctx); err != nil {
					t.Fatal(err)
				}
				save()
				req := tc.req
				if req == nil {
					req = s.HostTools()
				}
				if _, _, err := s.BeforeInference(ctx, model.Request{Tools: req}); err != nil {
					t.Fatal(err)
				}
				save() // with a RunLog, a delta that carries the step's tools
				c1 := model.ToolCall{ID: "c1", Name: "a", Args: map[string]any{}}
				c2 := model.ToolCall{ID: "c2", Name: "a", Args: map[string]any{}}
				if _, err := s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{c1, c2}}); err != nil {
					t.Fatal(err)
				}
				save()
				switch kind {
				case "rows":
					if puts, appends := rows.counts(); puts != 1 || appends != 3 {
						t.Fatalf("%d whole saves and %d deltas, want 1 and 3", puts, appends)
					}
				case "file":
					if fi, err := os.Stat(filepath.Join(dir, "runs", s.RunID()+".log")); err != nil || fi.Size() == 0 {
						t.Fatalf("the saves after the first were not deltas: %v", err)
					}
				}
				d1, _, err := s.ToolGate(ctx, c1)
				if err != nil {
					t.Fatal(err)
				}
				if g.saw("c1") == normal(t, []model.ToolSpec(nil)) {
					t.Fatal("the live gate saw no tools")
				}
				// The same run, restored from what was saved (a sidecar restart).
				r, err := rt.Restore(ctx, s.RunID(), nil)
				if err != nil {
					t.Fatal(err)
				}
				d2, _, err := r.ToolGate(ctx, c2)
				if err != nil {
					t.Fatal(err)
				}
				if d1.Decision != d2.Decision || g.saw("c1") != g.saw("c2") {
					t.Fatalf("live gate: %s, saw %s\nrestored gate: %s, saw %s", d1.Decision, g.saw("c1"), d2.Decision, g.saw("c2"))
				}
				// The restored run saves them again as it has them.
				live, restored := s.Checkpoint(), r.Checkpoint()
				if a, b := normal(t, live.StepTools), normal(t, restored.StepTools); a != b {
					t.Fatalf("step tools saved live: %s; restored: %s", a, b)
				}
			})
		}
	}
}

// The checkpoint holds the schema of a host tool once: the step's tools
// that are host tools are not saved again.
func TestCheckpointKeepsHostToolsOnce(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		extra []plugin.Plugin
		want  string // the checkpoint's step_tools
	}{
		{"the host's tools", nil, "null"},
		{"a transform's", []plugin.Plugin{searchTool()}, `[{"host":0},{"spec":{"name":"search",` +
			`"description":"finds tools","parameters":{"properties":{"q":{"type":"string"}},"type":"object"}}}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, nil, tc.extra...)
			s, _, err := rt.Start(ctx, run.StartOptions{Tools: schemaTools})
			if err != nil {
				t.Fatal(err)
			}
			s.StepStart(ctx)
			if _, _, err := s.BeforeInference(ctx, model.Request{Tools: s.HostTools()}); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(s.Checkpoint().StepTools)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("step_tools: %s, want %s", b, tc.want)
			}
		})
	}
}

// A checkpoint written before the step's tools were kept (no step_tools)
// still restores: the step's tools are the host tools its offered names
// name, and a name no host tool has is the name alone.
func TestOldCheckpointRestoresTheOfferedTools(t *testing.T) {
	ctx := context.Background()
	old := `{"run_id":"run_old","thread_id":"T","agent_id":"default","generation":"g","status":"running",
		"stage":"inferred","step":1,"values":{},"thread_values":{},"messages":[{"role":"user","content":"go"}],
		"offered":["a","search"],
		"tools":[{"name":"a","description":"tool a","parameters":{"type":"object"}},{"name":"b"}],
		"calls":[{"call":{"id":"c1","name":"a","args":{}},"status":"new"}],"revision":3,"seq":4}`
	var cp run.Checkpoint
	if err := json.Unmarshal([]byte(old), &cp); err != nil {
		t.Fatal(err)
	}
	g := &toolsGate{}
	rt := newRuntime(t, nil, g.plugin(t))
	s, err := rt.RestoreCheckpoint(ctx, cp, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := s.ToolGate(ctx, model.ToolCall{ID: "c1", Name: "a", Args: map[string]any{}})
	if err != nil || d.Decision != gate.Allow {
		t.Fatalf("gate: %+v %v", d, err)
	}
	want := normal(t, []model.ToolSpec{cp.Tools[0], {Name: "search"}})
	if got := g.saw("c1"); got != want {
		t.Fatalf("the restored step's tools: %s, want %s", got, want)
	}
	// Saved again, the checkpoint keeps them as they were restored.
	if b, _ := json.Marshal(s.Checkpoint().StepTools); string(b) != "null" {
		t.Fatalf("step_tools of the restored run: %s", b)
	}
}

// A delta that changes the offered tools without the step's tools (one
// written before they were kept) leaves them to follow the offered names;
// one with them sets them.
func TestApplyStepTools(t *testing.T) {
	zero := 0
	base := run.Checkpoint{RunID: "r", Seq: 1, Offered: []string{"a", "x"},
		Tools:     []model.ToolSpec{{Name: "a", Description: "host a"}},
		StepTools: []run.StepTool{{Host: &zero}, {Spec: &model.ToolSpec{Name: "x", Description: "own x"}}}}
	cp := base
	if err := cp.Apply(run.Delta{RunID: "r", Base: 1, Offered: &run.ToolNames{Names: []string{"a"}}}); err != nil {
		t.Fatal(err)
	}
	if cp.StepTools != nil {
		t.Fatalf("an old delta kept the step tools of the old offer: %+v", cp.StepTools)
	}
	cp = base
	own := []run.StepTool{{Spec: &model.ToolSpec{Name: "y"}}}
	if err := cp.Apply(run.Delta{RunID: "r", Base: 1, Offered: &run.ToolNames{Names: []string{"y"}},
		StepTools: &run.StepToolList{Tools: own}}); err != nil {
		t.Fatal(err)
	}
	if len(cp.StepTools) != 1 || cp.StepTools[0].Spec.Name != "y" {
		t.Fatalf("step tools: %+v", cp.StepTools)
	}
}

// A checkpoint whose step tool names no host tool and holds no spec is
// refused, not restored with a tool missing.
func TestRestoreRefusesABadStepTool(t *testing.T) {
	bad := 3
	cp := run.Checkpoint{RunID: "r", ThreadID: "T", Status: run.Running, Stage: run.StageInferred, Step: 1,
		Offered: []string{"a"}, Tools: []model.ToolSpec{{Name: "a"}}, StepTools: []run.StepTool{{Host: &bad}}}
	rt := newRuntime(t, nil)
	if _, err := rt.RestoreCheckpoint(context.Background(), cp, nil); err == nil {
		t.Fatal("restored a checkpoint whose step tool is host tool 3 of 1")
	}
}

// A journaled run restored in the middle of its step replays without a
// flip: the candidate, which is never restored, sees the step's tools, and
// so did the recorded run after its restore.
func TestReplayAgreesAcrossARestore(t *testing.T) {
	ctx := context.Background()
	j := &records{}
	g := &toolsGate{}
	st := fileStore(t, t.TempDir())
	rt := newRuntime(t, []run.Option{run.WithStore(st), run.WithJournal(j, "h")}, g.plugin(t))
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T", Messages: []model.Message{{Role: model.RoleUser, Content: "go"}}})
	if err != nil {
		t.Fatal(err)
	}
	c1 := model.ToolCall{ID: "c1", Name: "a", Args: map[string]any{}}
	c2 := model.ToolCall{ID: "c2", Name: "b", Args: map[string]any{}}
	s.StepStart(ctx)
	s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "a"}, {Name: "b"}}})
	s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{c1, c2}})
	if d, _, err := s.ToolGate(ctx, c1); err != nil || d.Decision != gate.Allow {
		t.Fatalf("live gate: %+v %v", d, err)
	}
	if err := s.SaveRun(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := rt.Restore(ctx, s.RunID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []model.ToolCall{c1, c2} {
		if c.ID == "c2" { // c1 passed the gate before the restore
			if _, _, err := r.ToolGate(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if r.Termination() != "" {
			break
		}
		if _, err := r.BeforeToolExecute(ctx, c); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.AfterToolExecute(ctx, c, model.Success("ok")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.StepEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Termination() == "" { // a step that answers
		r.StepStart(ctx)
		r.BeforeInference(ctx, model.Request{})
		r.AfterInference(ctx, model.Response{Text: "done"})
		if _, err := r.StepEnd(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.RunEnd(ctx); err != nil {
		t.Fatal(err)
	}
	rp, err := replay.New(rt)
	if err != nil {
		t.Fatal(err)
	}
	gates := 0
	for i := range j.recs {
		rec := j.recs[i]
		if rec.Phase == journal.ToolGate {
			gates++
		}
		flip, err := rp.Apply(ctx, &rec)
		if err != nil || flip != nil {
			t.Fatalf("record %d (%s): flip %+v, %v", i, rec.Phase, flip, err)
		}
	}
	if gates != 2 {
		t.Fatalf("%d gate records, want 2", gates)
	}
}
