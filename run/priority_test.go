package run_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/run"
)

// ranked is a plugin with a priority (0: the default) whose gate blocks
// with its id as the reason and whose step_start hook appends its id to
// the key "order".
func ranked(id string, priority int) plugin.Plugin {
	return plugin.New(id, func(r *plugin.Registrar) error {
		if priority != 0 {
			if err := r.SetPriority(priority, errs.Pos{}); err != nil {
				return err
			}
		}
		if err := r.Gate(plugin.GateFunc(func(ctx context.Context, in *plugin.Input) (gate.Decision, error) {
			return gate.Decision{Kind: gate.Block, Reason: id}, nil
		}), errs.Pos{}); err != nil {
			return err
		}
		return r.On(phase.StepStart, plugin.HookFunc(func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("order", id)
			return nil
		}), errs.Pos{})
	})
}

// TestPluginOrder: priority (higher first), then the agent's plugins
// list, then the order the plugins were given, decide the hooks' merge
// order and which of two equal gate decisions wins.
func TestPluginOrder(t *testing.T) {
	tests := []struct {
		name    string
		plugins []plugin.Plugin
		filter  []string
		want    []string
	}{
		{"given order", []plugin.Plugin{ranked("a", 0), ranked("b", 0), ranked("c", 0)}, nil, []string{"a", "b", "c"}},
		{"priority first", []plugin.Plugin{ranked("a", 0), ranked("b", 900), ranked("c", 100)}, nil, []string{"b", "a", "c"}},
		{"then the plugins list", []plugin.Plugin{ranked("a", 0), ranked("b", 0), ranked("c", 0)}, []string{"c", "a", "b"}, []string{"c", "a", "b"}},
		{"priority over the list", []plugin.Plugin{ranked("a", 0), ranked("b", 0), ranked("c", 501)}, []string{"b", "a", "c"}, []string{"c", "b", "a"}},
		{"the list filters", []plugin.Plugin{ranked("a", 0), ranked("b", 0), ranked("c", 0)}, []string{"c", "a"}, []string{"c", "a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := append([]plugin.Plugin{keys("k", state.Spec{Name: "order", Scope: state.ScopeRun, Merge: state.Commutative, Reducer: "append", Default: []any{}})}, tc.plugins...)
			var filter []string
			if tc.filter != nil {
				filter = append(slices.Clone(tc.filter), "k")
			}
			rt := newRuntime(t, []run.Option{run.WithAgents(run.Agent{ID: "a", Plugins: filter})}, ps...)
			m := turns(calls(call("echo", nil)))
			res, err := rt.Run(context.Background(), run.Request{Agent: "a", Model: m, Tools: []plugin.Tool{newTool("echo", nil)}})
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(res.State["order"]); got != fmt.Sprint(tc.want) {
				t.Errorf("step_start merge order %s, want %v", got, tc.want)
			}
			if res.Termination != "blocked:"+tc.want[0] {
				t.Errorf("termination %q: the gate tie goes to %q", res.Termination, tc.want[0])
			}
		})
	}
}

func TestPriorityOutOfRange(t *testing.T) {
	for _, n := range []int{-1, 1001} {
		_, err := run.NewSet(ranked("a", n))
		if errs.CodeOf(err) != errs.PluginLoadFailed {
			t.Errorf("priority %d: err = %v", n, err)
		}
	}
}
