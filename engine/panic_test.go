package engine_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
)

// A gate hook that panics blocks the call with a short reason, which the
// model and the client read; the stack goes to the log, at debug level.
func TestGatePanicGivesAShortReason(t *testing.T) {
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	broken := plugin.New("broken", func(r *plugin.Registrar) error {
		return r.Gate(plugin.GateFunc(func(ctx context.Context, in *plugin.Input) (gate.Decision, error) {
			var calls []string
			return gate.Decision{Reason: calls[len(in.Tool.Call.Name)]}, nil // panics: index out of range
		}), errs.Pos{})
	})
	f := newFixture(t, []engine.Option{engine.WithLogger(logger)}, nil, broken)
	res, err := f.x.Gate(context.Background(), plugin.Input{Tool: &plugin.ToolInfo{Call: model.ToolCall{ID: "c1", Name: "shell"}}})
	if err != nil {
		t.Fatal(err)
	}
	reason := res.Decision.Reason
	if res.Decision.Kind != gate.Block || !strings.Contains(reason, "broken") || !strings.Contains(reason, "internal error") ||
		!strings.Contains(reason, "index out of range") {
		t.Fatalf("decision %v, reason %q", res.Decision.Kind, reason)
	}
	if strings.Contains(reason, "goroutine") || strings.Contains(reason, ".go:") || len(reason) > 300 {
		t.Fatalf("the reason carries a stack: %q", reason)
	}
	if !strings.Contains(log.String(), "plugin call panicked") || !strings.Contains(log.String(), "panic_test.go") {
		t.Fatalf("the stack is not in the log:\n%s", log.String())
	}
}
