// Command embed shows awaken-lua inside a Go program: a Lua plugin loaded
// from a string, a Go tool, a model (here a scripted one; use
// openai.New for a real endpoint), and one autonomous run whose events are
// printed as they happen.
//
//	go run ./examples/embed
package main

import (
	"context"
	"fmt"
	"log"
	"testing/fstest"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/model/scripted"
	"github.com/awaken-lua/awaken-lua/run"
)

// A policy in Lua: refunds above a limit wait for a human.
const policy = `
local awaken = require("awaken")
local p = awaken.plugin { config = { limit = { type = "number", default = 100 } } }
p:tool_gate(function(ctx, call)
  if call.name == "refund" and call.args.amount > ctx.config.limit and not call.resume then
    return awaken.suspend { message = "refund " .. call.args.amount .. "?" }
  end
end)
return p
`

// refund is a tool written in Go.
type refund struct{}

func (refund) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "refund", Description: "refunds an order",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"amount": map[string]any{"type": "number"}}}}
}

func (refund) Execute(ctx context.Context, in *plugin.Input, args map[string]any, out *command.Command) (model.ToolResult, error) {
	return model.Success(fmt.Sprintf("refunded %v", args["amount"])), nil
}

func main() {
	ctx := context.Background()
	loader := &luabridge.Loader{Plugins: luabridge.Source{Name: "policies",
		FS: fstest.MapFS{"refunds.lua": {Data: []byte(policy)}}}}
	gen, err := loader.Load(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer gen.Close()

	configs, err := gen.Set.Configure(map[string]any{"refunds": map[string]any{"limit": 50}})
	if err != nil {
		log.Fatal(err)
	}
	rt, err := run.New(engine.New(gen.Set), run.WithAgents(run.Agent{ID: "support", Configs: configs}))
	if err != nil {
		log.Fatal(err)
	}
	llm := scripted.New([]scripted.Turn{
		{ToolCalls: []model.ToolCall{{Name: "refund", Args: map[string]any{"amount": 80.0}}}},
		{Text: "The refund is done."},
	})
	print := event.Func(func(ev event.Event) {
		b, _ := event.Marshal(ev)
		fmt.Println(string(b))
	})
	res, err := rt.Run(ctx, run.Request{Agent: "support", Prompt: "refund order 42", Model: llm,
		Tools: []plugin.Tool{refund{}}, Events: print})
	if err != nil {
		log.Fatal(err)
	}
	// A human approves: resume the waiting run by its ticket.
	for res.Status == run.Waiting {
		fmt.Println("approving:", res.Suspended[0].Message)
		res, err = rt.ResumeRun(ctx, run.ResumeRequest{RunID: res.RunID, Model: llm, Tools: []plugin.Tool{refund{}}, Events: print,
			Decisions: []run.ResumeDecision{{Target: res.Suspended[0].ID, Action: "resume"}}})
		if err != nil {
			log.Fatal(err)
		}
	}
	if res.Err != nil { // set even when the run ended naturally but its thread was not saved
		log.Fatal(res.Err)
	}
	fmt.Println("termination:", res.Termination)
}
