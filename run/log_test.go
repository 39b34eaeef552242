package run_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// The runtime's log lines about a run name it once: a plugin's
// runtime.log line and a gate hook that failed.
func TestRunLogLinesNameTheRunOnce(t *testing.T) {
	var buf strings.Builder
	failing := plugin.New("failing", func(r *plugin.Registrar) error {
		return r.Gate(plugin.GateFunc(func(ctx context.Context, in *plugin.Input) (gate.Decision, error) {
			return gate.Decision{}, errors.New("boom")
		}), errs.Pos{})
	})
	rt := newRuntime(t, []run.Option{run.WithLogger(slog.New(slog.NewTextHandler(&buf, nil)))},
		hook("logger", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Emit(engine.EffectLog, "hello")
			return nil
		}), failing)
	res, err := rt.Run(context.Background(), run.Request{Model: turns(calls(call("deploy", nil)), model.Response{Text: "done"}),
		Tools: []plugin.Tool{newTool("deploy", nil)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"msg=hello", "gate hook failed"} {
		found := false
		for line := range strings.Lines(buf.String()) {
			if !strings.Contains(line, msg) {
				continue
			}
			found = true
			if strings.Count(line, "run_id=") != 1 || !strings.Contains(line, "run_id="+res.Session.RunID()) {
				t.Fatalf("want run_id=%s once: %s", res.Session.RunID(), line)
			}
		}
		if !found {
			t.Fatalf("no line with %s: %s", msg, buf.String())
		}
	}
}
