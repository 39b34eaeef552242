package replay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/run"
)

var clockCut = time.Date(2026, 1, 1, 18, 0, 0, 0, time.UTC)

// clockRuntime: a gate that blocks from clockCut on (a business-hours
// rule) when clocked is set, else allows everything.
func clockRuntime(t *testing.T, st run.Store, j run.Recorder, clocked bool) *run.Runtime {
	t.Helper()
	g := plugin.New("g", func(r *plugin.Registrar) error {
		return r.Gate(plugin.GateFunc(func(ctx context.Context, in *plugin.Input) (gate.Decision, error) {
			if clocked && !in.Now.Before(clockCut) {
				return gate.Decision{Kind: gate.Block, Reason: "after hours"}, nil
			}
			return gate.Decision{}, nil
		}), errs.Pos{})
	})
	return runtimeOf(t, g, st, j)
}

func recordRetried(t *testing.T, failFirstGateSave bool, candClocked ...bool) *replay.Report {
	ctx := context.Background()
	dir, w, st, rt := recording(t, true)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tools := []model.ToolSpec{{Name: "ls"}}
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T", Now: clockCut.Add(-time.Hour), Tools: tools,
		Messages: []model.Message{{Role: model.RoleUser, Content: "go"}}})
	must(err)
	must(s.SaveRun(ctx))
	_, err = s.StepStart(ctx)
	must(err)
	_, _, err = s.BeforeInference(ctx, model.Request{Tools: tools})
	must(err)
	call := model.ToolCall{ID: "c1", Name: "ls", Args: map[string]any{}}
	_, err = s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{call}})
	must(err)
	must(s.SaveRun(ctx))
	if failFirstGateSave {
		s.SetNow(clockCut.Add(-time.Second)) // 17:59:59: allowed
		_, _, err = s.ToolGate(ctx, call)
		must(err)
		st.fail.Store(true)
		if err := s.SaveRun(ctx); err == nil {
			t.Fatal("save did not fail")
		}
		s, err = rt.Restore(ctx, s.RunID(), nil)
		must(err)
	}
	s.SetNow(clockCut.Add(time.Second)) // 18:00:01: the retry, what the agent saw
	d, _, err := s.ToolGate(ctx, call)
	must(err)
	if d.Decision != gate.Block {
		t.Fatalf("recorded decision %v", d.Decision)
	}
	must(s.SaveRun(ctx))
	_, _, err = s.AfterToolExecute(ctx, call, model.ToolResult{Status: "error", Message: "blocked"})
	must(err)
	must(w.Close())
	rep, err := replay.Run(ctx, clockRuntime(t, run.NewMemoryStore(), nil, len(candClocked) > 0), []string{dir}, replay.Options{})
	must(err)
	return rep
}

// A host's retry after a failed save that decided otherwise than the
// first try (its clock moved past a business-hours rule) cannot be
// followed, as the candidate was driven through the first try: replay
// stops following the run and says why, rather than report a flip the
// recording plugins do not make or hide one as a refused input. Without
// the failed save the same run replays to its flip.
func TestReplayRetryThatDecidedOtherwise(t *testing.T) {
	if base := recordRetried(t, false); len(base.Flips) != 1 || base.Flips[0].Kind != "block->allow" {
		t.Fatalf("without a failed save: flips %+v", base.Flips)
	}
	for _, clocked := range []bool{true, false} {
		var rep *replay.Report
		if clocked {
			rep = recordRetried(t, true, true) // the recording plugins
		} else {
			rep = recordRetried(t, true) // allow everything
		}
		if len(rep.Flips) != 0 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Msg, "decided otherwise the second time") {
			t.Errorf("candidate clocked=%v: flips %+v, problems %v", clocked, rep.Flips, rep.Problems)
		}
	}
}
