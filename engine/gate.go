package engine

import (
	"context"
	"fmt"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// GateResult is the gate's verdict on one call.
type GateResult struct {
	// Decision is the winner; Kind is gate.Allow when no hook decided (a
	// rewrite alone also ends as Allow, with Args rewritten).
	Decision gate.Tagged
	// Args are the call's arguments after any rewrite.
	Args map[string]any
	// RewrittenBy names the plugin whose rewrite was applied, if any.
	RewrittenBy string
	// Conflicts are decisions of the winner's priority that lost to an
	// earlier plugin, and a second rewrite that was ignored.
	Conflicts []gate.Tagged
}

// Gate evaluates the active gate hooks for in.Tool, in parallel on the
// current snapshot, and resolves their decisions by priority (block >
// suspend > set_result > rewrite; the first in hook order wins a tie). A
// rewrite replaces the arguments and the gate is evaluated once more on
// them; a second rewrite is ignored. A gate hook that fails blocks the
// call (fail closed) with the error as the reason. Gates write nothing, so
// calling Gate again for the same call changes nothing.
func (x *Exec) Gate(ctx context.Context, in plugin.Input) (GateResult, error) {
	if in.Tool == nil {
		return GateResult{}, fmt.Errorf("engine: Gate needs Input.Tool")
	}
	// Gates write nothing: they read the current snapshot, no fork.
	in.Phase, in.Configs, in.Log, in.Audit = phase.ToolGate, x.configs, x.log, x.audit
	if in.Now.IsZero() {
		in.Now = x.e.clock()
	}
	in.Snap = x.store.Snapshot()
	call := in.Tool.Call
	res := GateResult{Args: call.Args}
	win, lost, err := x.evaluate(ctx, &in)
	if err != nil {
		return res, err
	}
	res.Conflicts = lost
	if win.Kind == gate.Rewrite {
		args, err := value.Normalize(win.Args)
		m, _ := args.(map[string]any)
		if err != nil || (args != nil && m == nil) {
			win = gate.Tagged{Plugin: win.Plugin, Decision: gate.Decision{Kind: gate.Block,
				Reason: fmt.Sprintf("gate of %s rewrote the arguments to something that is not a table", win.Plugin)}}
			res.Decision = win
			return res, nil
		}
		if m == nil {
			m = map[string]any{}
		}
		res.Args, res.RewrittenBy = m, win.Plugin
		tool := *in.Tool
		tool.Call = model.ToolCall{ID: call.ID, Name: call.Name, Args: m}
		in.Tool = &tool
		second, lost2, err := x.evaluate(ctx, &in)
		if err != nil {
			return res, err
		}
		res.Conflicts = append(res.Conflicts, lost2...)
		if second.Kind == gate.Rewrite {
			x.log.Warn("second rewrite ignored", "run_id", in.Run.ID, "call_id", call.ID, "tool", call.Name, "plugin", second.Plugin)
			res.Conflicts = append(res.Conflicts, second)
			second = gate.Tagged{}
		}
		win = second
	}
	for _, c := range res.Conflicts {
		x.log.Warn("gate conflict", "run_id", in.Run.ID, "call_id", call.ID, "tool", call.Name, "winner", win.Plugin,
			"loser", c.Plugin, "decision", c.Kind.String())
	}
	res.Decision = win
	return res, nil
}

func (x *Exec) evaluate(ctx context.Context, in *plugin.Input) (gate.Tagged, []gate.Tagged, error) {
	gates := x.view.Gates()
	switch len(gates) {
	case 0:
		return gate.Tagged{}, nil, nil
	case 1: // the common case, without the bookkeeping of many
		var d gate.Decision
		err := x.e.timed(gates[0].Plugin, phase.ToolGate, "gate", func() (err error) { d, err = callGate(ctx, gates[0].Hook, in); return err })
		if ctxErr := ctx.Err(); ctxErr != nil {
			return gate.Tagged{}, nil, ctxErr
		}
		if err != nil {
			d = x.failClosed(err, in.Run.ID, gates[0])
		}
		if d.Kind == gate.Allow {
			return gate.Tagged{}, nil, nil
		}
		return gate.Tagged{Decision: d, Plugin: gates[0].Plugin}, nil, nil
	}
	ds := make([]gate.Tagged, len(gates))
	failures := runParallel(len(gates), &x.e.cost[phase.ToolGate], func(i int) error {
		var d gate.Decision
		err := x.e.timed(gates[i].Plugin, phase.ToolGate, "gate", func() (err error) { d, err = callGate(ctx, gates[i].Hook, in); return err })
		ds[i] = gate.Tagged{Decision: d, Plugin: gates[i].Plugin}
		return err
	})
	if err := ctx.Err(); err != nil {
		return gate.Tagged{}, nil, err
	}
	for i, err := range failures {
		if err != nil {
			ds[i] = gate.Tagged{Plugin: gates[i].Plugin, Decision: x.failClosed(err, in.Run.ID, gates[i])}
		}
	}
	win, lost := gate.Resolve(ds)
	return win, lost, nil
}

// failClosed turns a gate hook's failure into a block with the error as
// the reason.
func (x *Exec) failClosed(err error, runID string, g plugin.GateEntry) gate.Decision {
	herr := HookError(err, g.Plugin, phase.ToolGate, g.Pos)
	x.log.Warn("gate hook failed; the call is blocked", "run_id", runID, "plugin", g.Plugin, "error", herr.Error())
	return gate.Decision{Kind: gate.Block, Reason: herr.Error()}
}

func callGate(ctx context.Context, h plugin.GateHook, in *plugin.Input) (d gate.Decision, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = recovered(v)
		}
	}()
	d, err = h.Gate(ctx, in)
	if err == nil && d.Kind > gate.Block {
		err = errs.New(errs.HookFailed, "gate returned an unknown decision kind %d", d.Kind)
	}
	return d, err
}
