package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/model/scripted"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/stdlib"
)

// eqPlugin counts visits in a kept thread key and in a thread key with
// persist = false, counts the calls that ran, and blocks shell without a
// reason (the runtime words it).
const eqPlugin = `local awaken = require("awaken")
local p = awaken.plugin { id = "eq", description = "the three-way equivalence scenario" }
local visits = p:key("eq.visits", { scope = "thread", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" } })
local scratch = p:key("eq.scratch", { scope = "thread", persist = false, merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" } })
local ran = p:key("eq.ran", { scope = "run", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" } })
p:on("run_start", function(ctx) ctx:update(visits, 1); ctx:update(scratch, 1) end)
p:tool_gate(function(ctx, call)
  if call.name == "shell" then return awaken.block("") end
end)
p:on("after_tool_execute", function(ctx)
  if ctx.tool.decision == "allow" then ctx:update(ran, 1) end
end)
return p
`

// runOutcome is what a run decided, as all three drivers report it.
type runOutcome struct {
	termination string
	decisions   string // call:decision:reason, in order
	visits      float64
	scratch     float64
	ran         float64
}

type echoTool struct{ name string }

func (t echoTool) Spec() model.ToolSpec { return model.ToolSpec{Name: t.name} }
func (t echoTool) Execute(context.Context, *plugin.Input, map[string]any, *command.Command) (model.ToolResult, error) {
	return model.Success("ok"), nil
}

var eqCalls = []model.ToolCall{
	{ID: "c1", Name: "fs_read", Args: map[string]any{"path": "a.txt"}},
	{ID: "c2", Name: "shell", Args: map[string]any{"cmd": "rm -rf /"}},
}

// The same scenario, two runs on one thread, through the in-process loop,
// the sidecar and the Lua test harness: the same terminations, gate
// decisions and state, including a thread key with persist = false that
// starts afresh in each run.
func TestHarnessRunAndSidecarAgree(t *testing.T) {
	dir := project(t, "", map[string]string{"eq.lua": eqPlugin})
	ctx := context.Background()

	// In process.
	h := openHost(t, dir)
	defer h.Close()
	var inproc []runOutcome
	for i := 0; i < 2; i++ {
		g := h.Acquire()
		rec := &decisions{}
		res, err := g.Runtime.Run(ctx, run.Request{ThreadID: "t", Prompt: "go", Events: rec,
			Model: scripted.New([]scripted.Turn{{ToolCalls: eqCalls}}),
			Tools: []plugin.Tool{echoTool{"fs_read"}, echoTool{"shell"}}})
		g.Release()
		if err != nil {
			t.Fatal(err)
		}
		inproc = append(inproc, runOutcome{res.Termination, rec.String(), num(res.State["eq.visits"]), num(res.State["eq.scratch"]), num(res.State["eq.ran"])})
	}
	if inproc[1].visits != 2 || inproc[1].scratch != 1 || !strings.Contains(inproc[0].decisions, "c2:block:blocked by eq") {
		t.Fatalf("the in-process runs: %+v", inproc)
	}

	// The sidecar, on a fresh host over the same project.
	sc := newSidecar(t, dir, Options{})
	var side []runOutcome
	for i := 0; i < 2; i++ {
		id := sc.startRun(map[string]any{"thread_id": "t", "messages": []any{map[string]any{"role": "user", "content": "go"}},
			"tools": []any{map[string]any{"name": "fs_read"}, map[string]any{"name": "shell"}}})
		sc.phase(id, "step_start", nil)
		sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
		var calls []any
		for _, c := range eqCalls {
			calls = append(calls, call(c.ID, c.Name, c.Args))
		}
		sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": calls}})
		var ds []string
		for _, c := range eqCalls {
			body := map[string]any{"call": call(c.ID, c.Name, c.Args)}
			g := sc.phase(id, "tool_gate", body)
			ds = append(ds, fmt.Sprintf("%s:%s:%s", c.ID, g.str("decision"), g.str("reason")))
			if g.str("decision") == "allow" {
				sc.phase(id, "before_tool_execute", body)
				body["result"] = map[string]any{"status": "success", "data": "ok"}
			}
			sc.phase(id, "after_tool_execute", body)
		}
		end := sc.phase(id, "run_end", nil)
		got := sc.must(200, "GET", "/v1/runs/"+id, nil)
		st, _ := got.body["state"].(map[string]any)
		side = append(side, runOutcome{end.str("termination"), blockedOnly(strings.Join(ds, " ")), num(st["eq.visits"]), num(st["eq.scratch"]), num(st["eq.ran"])})
	}
	for i := range inproc {
		if side[i] != inproc[i] {
			t.Errorf("run %d: sidecar %+v, in process %+v", i+1, side[i], inproc[i])
		}
	}

	// The harness: a Lua test that expects what the in-process runs did.
	var lua strings.Builder
	lua.WriteString("local awaken = require(\"awaken\")\nlocal t = require(\"awaken.testing\")\n")
	lua.WriteString("t.test(\"three-way\", function()\n  local h = t.harness { plugins = { \"eq\" } }\n")
	lua.WriteString("  local tools = { fs_read = function() return awaken.success(\"ok\") end, shell = function() return awaken.success(\"ok\") end }\n")
	for i, o := range inproc {
		fmt.Fprintf(&lua, "  local r%d = h:run { thread = \"t\", prompt = \"go\", tools = tools, turns = { { tool_calls = {\n", i)
		for _, c := range eqCalls {
			fmt.Fprintf(&lua, "    { id = %q, name = %q, args = { %s = %q } },\n", c.ID, c.Name, firstKey(c.Args), c.Args[firstKey(c.Args)])
		}
		lua.WriteString("  } } } }\n")
		fmt.Fprintf(&lua, "  t.eq(r%d.termination, %q)\n", i, o.termination)
		fmt.Fprintf(&lua, "  t.eq({ r%d.state[\"eq.visits\"], r%d.state[\"eq.scratch\"], r%d.state[\"eq.ran\"] }, { %g, %g, %g })\n", i, i, i, o.visits, o.scratch, o.ran)
		fmt.Fprintf(&lua, "  local ds = {}\n  for _, ev in ipairs(r%d.events) do\n    if ev.event == \"gate_decision\" then ds[#ds + 1] = ev.call_id .. \":\" .. ev.decision .. \":\" .. ev.reason end\n  end\n", i)
		fmt.Fprintf(&lua, "  t.eq(table.concat(ds, \" \"), %q)\n", blockedOnly(o.decisions))
	}
	// One phase at a time: the kept key counts on, the other starts afresh.
	lua.WriteString("  h:phase(\"run_start\", {}, { thread = \"p\" })\n  local p2 = h:phase(\"run_start\", {}, { thread = \"p\" })\n")
	lua.WriteString("  t.eq({ p2.state[\"eq.visits\"], p2.state[\"eq.scratch\"] }, { 2, 1 })\nend)\n")
	if err := os.WriteFile(filepath.Join(dir, "scripts", "eq_test.lua"), []byte(lua.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src := luabridge.Source{FS: os.DirFS(filepath.Join(dir, "scripts")), Name: "scripts"}
	files, err := luabridge.FindTests(src)
	if err != nil {
		t.Fatal(err)
	}
	sum := luabridge.RunTests(ctx, luabridge.TestOptions{Files: files, Plugins: src, Stdlib: luabridge.Source{FS: stdlib.FS, Name: "stdlib"}})
	if sum.Failed != 0 || sum.Passed != 1 {
		for _, r := range sum.Results {
			t.Errorf("%s: %s: %s", r.Pos, r.Name, r.Message)
		}
		t.Fatalf("the harness disagrees with the in-process runs:\n%s", lua.String())
	}
}

// decisions records the gate's decisions as call:decision:reason.
type decisions struct{ list []string }

func (d *decisions) Emit(ev event.Event) {
	if g, ok := ev.(event.GateDecision); ok {
		d.list = append(d.list, fmt.Sprintf("%s:%s:%s", g.CallID, g.Decision, g.Reason))
	}
}

func (d *decisions) String() string { return strings.Join(d.list, " ") }

// blockedOnly keeps the decisions a run's events report (allow is not an
// event).
func blockedOnly(s string) string {
	var out []string
	for _, d := range strings.Fields(s) {
		if !strings.Contains(d, ":allow:") {
			out = append(out, d)
		}
	}
	return strings.Join(out, " ")
}

func firstKey(m map[string]any) string {
	for k := range m {
		return k
	}
	return ""
}

func num(v any) float64 { f, _ := v.(float64); return f }
