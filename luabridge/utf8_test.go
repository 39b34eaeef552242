package luabridge_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// A block's reason and an error result's message leave Lua as UTF-8
// too (as a stop's code and detail do): they are journaled and stored.
func TestDecisionTextsLeaveLuaAsUTF8(t *testing.T) {
	g, err := loadFS(t, fstest.MapFS{"x.lua": {Data: []byte(`local awaken = require("awaken")
local p = awaken.plugin { id = "x" }
p:tool_gate(function(ctx, call)
  if call.name == "a" then return awaken.block("no \255") end
  return awaken.set_result(awaken.error(("é"):sub(1, 1)))
end)
return p
`)}})
	if err != nil {
		t.Fatal(err)
	}
	rt := runtimeFor(t, g)
	ctx := context.Background()
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	calls := []model.ToolCall{{ID: "c1", Name: "a", Args: map[string]any{}}, {ID: "c2", Name: "b", Args: map[string]any{}}}
	_, _ = s.StepStart(ctx)
	_, _, _ = s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "a"}, {Name: "b"}}})
	_, _ = s.AfterInference(ctx, model.Response{ToolCalls: calls})
	d, _, err := s.ToolGate(ctx, calls[1])
	if err != nil || d.Result == nil || d.Result.Message != "\uFFFD" {
		t.Fatalf("the error result: %+v %v", d.Result, err)
	}
	if d, _, err = s.ToolGate(ctx, calls[0]); err != nil || d.Reason != "no \uFFFD" {
		t.Fatalf("the block: %q %v", d.Reason, err)
	}
}
