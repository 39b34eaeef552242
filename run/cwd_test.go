package run_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// cwdPlugins suspend a Read and, when it is resumed, let it through only in
// /work/a; seen gets the working directory each hook read.
func cwdPlugins(seen *[]string) []plugin.Plugin {
	return []plugin.Plugin{
		hook("starts", phase.RunStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			*seen = append(*seen, "run_start "+in.Run.Cwd)
			return nil
		}),
		gateFn("gate", func(in *plugin.Input) gate.Decision {
			*seen = append(*seen, "tool_gate "+in.Run.Cwd)
			switch {
			case in.Tool.Resume == nil:
				return gate.Decision{Kind: gate.Suspend, Ticket: &gate.Ticket{Message: "read?"}}
			case in.Run.Cwd != "/work/a":
				return gate.Decision{Kind: gate.Block, Reason: "not in /work/a"}
			}
			return gate.Decision{}
		}),
	}
}

// The working directory a host sets is what hooks read as the run's, and
// a run restored from any store (whole or from its changes, in this
// process or in another runtime) keeps it, so a call resumed later is
// decided in the directory it was made in; a checkpoint written before the
// field was kept restores without one.
func TestCwdKeptAcrossRestore(t *testing.T) {
	for _, kind := range []string{"memory", "rows", "file", "rows-old"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			var st run.Store
			rows := newLogStore()
			switch kind {
			case "memory":
				st = run.NewMemoryStore()
			case "rows", "rows-old":
				st = rows
			case "file":
				st = fileStore(t, t.TempDir())
			}
			var seen []string
			rt := newRuntime(t, []run.Option{run.WithStore(st)}, cwdPlugins(&seen)...)
			s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T", Tools: []model.ToolSpec{{Name: "Read"}}, Cwd: "/work/b"})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SaveRun(ctx); err != nil { // whole
				t.Fatal(err)
			}
			if _, err := s.StepStart(ctx); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.BeforeInference(ctx, model.Request{Tools: s.HostTools()}); err != nil {
				t.Fatal(err)
			}
			c := model.ToolCall{ID: "c1", Name: "Read", Args: map[string]any{"file_path": "x"}}
			if _, err := s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{c}}); err != nil {
				t.Fatal(err)
			}
			if d, _, err := s.ToolGate(ctx, c); err != nil || d.Decision != gate.Suspend {
				t.Fatalf("gate: %v %v", d.Decision, err)
			}
			if _, err := s.StepEnd(ctx); err != nil || s.Status() != run.Waiting {
				t.Fatalf("step_end: %v, status %s", err, s.Status())
			}
			// An event of the agent's in another directory, while the run
			// waits: saved as a change of the run.
			s.SetCwd("/work/a")
			_, appends := rows.counts()
			if err := s.SaveRun(ctx); err != nil {
				t.Fatal(err)
			}
			if _, now := rows.counts(); st == run.Store(rows) && now != appends+1 {
				t.Fatalf("the save was not a change: %d changes before, %d after", appends, now)
			}
			want := "/work/a"
			if kind == "rows-old" {
				// As a store holds a run saved before checkpoints kept the
				// working directory.
				rows.mu.Lock()
				var raw map[string]any
				if err := json.Unmarshal(rows.base[s.RunID()], &raw); err != nil {
					t.Fatal(err)
				}
				delete(raw, "cwd")
				rows.base[s.RunID()], _ = json.Marshal(raw)
				for i, b := range rows.deltas[s.RunID()] {
					var d map[string]any
					if err := json.Unmarshal(b, &d); err != nil {
						t.Fatal(err)
					}
					delete(d, "cwd")
					rows.deltas[s.RunID()][i], _ = json.Marshal(d)
				}
				rows.mu.Unlock()
				want = ""
			}
			if got := s.Checkpoint().Cwd; got != "/work/a" {
				t.Fatalf("the checkpoint's cwd is %q", got)
			}

			var seen2 []string
			rt2 := newRuntime(t, []run.Option{run.WithStore(st)}, cwdPlugins(&seen2)...)
			r, err := rt2.Restore(ctx, s.RunID(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Cwd() != want {
				t.Fatalf("restored cwd %q, want %q", r.Cwd(), want)
			}
			if _, _, err := r.Resume(ctx, []run.ResumeDecision{{Target: "c1", Action: "resume"}}); err != nil {
				t.Fatal(err)
			}
			d, _, err := r.ToolGate(ctx, c) // the resumed call passes the gate again
			if err != nil {
				t.Fatal(err)
			}
			wantDecision := gate.Allow
			if want == "" {
				wantDecision = gate.Block
			}
			if d.Decision != wantDecision {
				t.Fatalf("resumed: %+v, want %s", d, wantDecision)
			}
			if wantSeen := []string{"run_start /work/b", "tool_gate /work/b"}; !slices.Equal(seen, wantSeen) {
				t.Fatalf("hooks read %q, want %q", seen, wantSeen)
			}
			if wantSeen := []string{"tool_gate " + want}; !slices.Equal(seen2, wantSeen) {
				t.Fatalf("after the restore hooks read %q, want %q", seen2, wantSeen)
			}
		})
	}
}
