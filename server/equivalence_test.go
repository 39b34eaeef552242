package server

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// goTool is a host tool both drivers run: in process through the loop, and
// over HTTP by the test acting as the client.
type goTool struct {
	spec model.ToolSpec
	fn   func(args map[string]any) model.ToolResult
}

func (t goTool) Spec() model.ToolSpec { return t.spec }
func (t goTool) Execute(_ context.Context, _ *plugin.Input, args map[string]any, _ *command.Command) (model.ToolResult, error) {
	return t.fn(args), nil
}

func scenarioTools() []goTool {
	num := func(v any) float64 { f, _ := v.(float64); return f }
	return []goTool{
		{model.ToolSpec{Name: "add", Description: "adds two numbers", Parameters: map[string]any{"type": "object"}},
			func(a map[string]any) model.ToolResult { return model.Success(num(a["a"]) + num(a["b"])) }},
		{model.ToolSpec{Name: "fs_read", Description: "reads a file"},
			func(a map[string]any) model.ToolResult { return model.Success("contents of " + fmt.Sprint(a["path"])) }},
		{model.ToolSpec{Name: "ls", Description: "lists a directory"},
			func(a map[string]any) model.ToolResult { return model.Success([]any{"main.go", fmt.Sprint(a["safe"])}) }},
		{model.ToolSpec{Name: "echo", Description: "echoes text"},
			func(a map[string]any) model.ToolResult { return model.Success(fmt.Sprint(a["text"])) }},
		{model.ToolSpec{Name: "shell", Description: "runs a command"},
			func(a map[string]any) model.ToolResult { return model.Success("ran " + fmt.Sprint(a["cmd"])) }},
	}
}

type scenario struct {
	name   string
	agent  string
	prompt string
	turns  []model.Response
	// twice runs the scenario twice on one thread and compares the second
	// run, which starts from the first one's conversation and state.
	twice bool
}

func tc(id, name string, args map[string]any) model.ToolCall {
	return model.ToolCall{ID: id, Name: name, Args: args}
}

var scenarios = []scenario{
	{"every decision", "", "add 2 and 3, and remind me", []model.Response{
		{ToolCalls: []model.ToolCall{
			tc("c1", "add", map[string]any{"a": 2.0, "b": 3.0}),
			tc("c2", "fs_read", map[string]any{"path": ".env"}),
			tc("c3", "ls", map[string]any{"dir": "src"}),
		}},
		{Text: "checking", ToolCalls: []model.ToolCall{tc("c4", "echo", map[string]any{"text": "the SECRET plan"})}},
		{Text: "5"},
	}, false},
	{"blocked", "", "clean up", []model.Response{
		{ToolCalls: []model.ToolCall{
			tc("c1", "add", map[string]any{"a": 1.0, "b": 1.0}),
			tc("c2", "shell", map[string]any{"cmd": "rm -rf /"}),
			tc("c3", "echo", map[string]any{"text": "never"}),
		}},
	}, false},
	{"stopped by a plugin", "", "keep going", []model.Response{
		{ToolCalls: []model.ToolCall{tc("", "add", nil), tc("", "add", nil), tc("", "add", nil)}},
		{ToolCalls: []model.ToolCall{tc("", "echo", nil), tc("", "echo", nil), tc("", "echo", nil)}},
		{Text: "never reached"},
	}, false},
	{"a plugin's own tool", "", "note it down", []model.Response{
		{ToolCalls: []model.ToolCall{
			tc("c1", "note", map[string]any{"text": "draft"}),
			tc("c2", "add", map[string]any{"a": 1.0, "b": 1.0}),
			tc("c3", "note", map[string]any{"text": "again"}),
		}},
		{Text: "noted"},
	}, false},
	{"a system prompt and a thread's second run", "prompted", "add again, and remind me", []model.Response{
		{ToolCalls: []model.ToolCall{tc("c1", "add", map[string]any{"a": 1.0, "b": 2.0})}},
		{Text: "3"},
	}, true},
}

// A run driven over HTTP ends with the same termination, state, gate
// decisions and inference requests as the same run driven in process by
// Runtime.Run with the same turns and tools: the sidecar adds no behaviour.
func TestHTTPRunMatchesInProcessRun(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"policy.lua": policyLua, "notes.lua": notesLua}), Options{Log: quietLog()})
	for i, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			want := inProcess(t, sc, s, fmt.Sprintf("inproc-%d", i))
			got := overHTTP(t, sc, s, fmt.Sprintf("http-%d", i))
			if s.twice {
				want = inProcess(t, sc, s, fmt.Sprintf("inproc-%d", i))
				got = overHTTP(t, sc, s, fmt.Sprintf("http-%d", i))
			}
			t.Logf("termination %q, decisions %v", got.termination, got.decisions)
			if got.termination != want.termination {
				t.Fatalf("termination: http %q, in process %q", got.termination, want.termination)
			}
			if !reflect.DeepEqual(got.decisions, want.decisions) {
				t.Fatalf("gate decisions:\nhttp       %v\nin process %v", got.decisions, want.decisions)
			}
			if !reflect.DeepEqual(got.state, want.state) {
				t.Fatalf("state:\nhttp       %s\nin process %s", mustJSON(got.state), mustJSON(want.state))
			}
			if !reflect.DeepEqual(got.requests, want.requests) {
				t.Fatalf("requests:\nhttp       %s\nin process %s", mustJSON(got.requests), mustJSON(want.requests))
			}
		})
	}
}

type outcome struct {
	termination string
	decisions   []string // call_id:decision:reason, for every decision other than a plain allow
	state       any
	requests    any
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// plain round-trips through JSON and drops what names the run or thread.
func plain(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(mustJSON(v)), &out); err != nil {
		t.Fatal(err)
	}
	if m, ok := out.(map[string]any); ok {
		if r, ok := m[run.KeyRun].(map[string]any); ok {
			delete(r, "id")
			delete(r, "thread_id")
		}
	}
	return out
}

func inProcess(t *testing.T, sc *sidecar, s scenario, thread string) outcome {
	t.Helper()
	g := sc.h.Acquire()
	defer g.Release()
	turns := append([]model.Response(nil), s.turns...)
	m := model.ModelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		if len(turns) == 0 {
			return model.Response{}, fmt.Errorf("out of turns")
		}
		r := turns[0]
		turns = turns[1:]
		return r, nil
	})
	var tools []plugin.Tool
	for _, tl := range scenarioTools() {
		tools = append(tools, tl)
	}
	rec := &event.Recorder{}
	res, err := g.Runtime.Run(context.Background(), run.Request{Agent: s.agent, ThreadID: thread, Prompt: s.prompt,
		Model: m, Tools: tools, Events: rec})
	if err != nil || res.Err != nil {
		t.Fatalf("in process: %v %v", err, res.Err)
	}
	out := outcome{termination: res.Termination, state: plain(t, res.State), requests: plain(t, res.Requests)}
	for _, ev := range rec.Events() {
		if d, ok := ev.(event.GateDecision); ok {
			out.decisions = append(out.decisions, d.CallID+":"+d.Decision+":"+d.Reason)
		}
	}
	return out
}

// overHTTP is a client driving the same run: it gates calls in model order
// and, like the loop, runs allowed calls before handling a call the gate
// decided about.
func overHTTP(t *testing.T, sc *sidecar, s scenario, thread string) outcome {
	t.Helper()
	tools := scenarioTools()
	var specs []model.ToolSpec
	byName := map[string]goTool{}
	for _, tl := range tools {
		specs = append(specs, tl.spec)
		byName[tl.spec.Name] = tl
	}
	id := sc.startRun(map[string]any{"agent": s.agent, "thread_id": thread, "tools": specs,
		"messages": []model.Message{{Role: model.RoleUser, Content: s.prompt}}})
	var out outcome
	var requests []any
	term := ""
	for step, turn := range s.turns {
		if term = sc.phase(id, "step_start", nil).str("termination"); term != "" {
			break
		}
		bi := sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
		requests = append(requests, bi.body["request"])
		if term = bi.str("termination"); term != "" {
			break
		}
		if term = sc.phase(id, "after_inference", map[string]any{"response": turn}).str("termination"); term != "" {
			break
		}
		var ready []model.ToolCall
		flush := func() {
			for _, c := range ready {
				if term != "" {
					return
				}
				started := sc.phase(id, "before_tool_execute", map[string]any{"call": c})
				if term = started.str("termination"); term != "" {
					return
				}
				var res any
				if r, ok := started.body["result"]; ok {
					res = r // a plugin's tool: the sidecar ran it
				} else {
					res = byName[c.Name].fn(c.Args)
				}
				term = sc.phase(id, "after_tool_execute", map[string]any{"call": c, "result": res}).str("termination")
			}
			ready = nil
		}
		for i, c := range turn.ToolCalls {
			if term != "" {
				break
			}
			if c.ID == "" {
				c.ID = fmt.Sprintf("call_%d_%d", step+1, i+1)
			}
			g := sc.phase(id, "tool_gate", map[string]any{"call": c})
			d := g.str("decision")
			args, _ := g.body["args"].(map[string]any)
			sent := plain(t, c.Args)
			if c.Args == nil {
				sent = map[string]any{}
			}
			rewritten := d == "allow" && !reflect.DeepEqual(any(args), sent)
			switch {
			case rewritten:
				out.decisions = append(out.decisions, c.ID+":rewrite:")
			case d != "allow":
				out.decisions = append(out.decisions, c.ID+":"+d+":"+g.str("reason"))
			}
			if d == "allow" {
				c.Args = args
				ready = append(ready, c)
				continue
			}
			flush()
			if term == "" {
				term = sc.phase(id, "after_tool_execute", map[string]any{"call": c}).str("termination")
			}
		}
		flush()
		if term != "" {
			break
		}
		if term = sc.phase(id, "step_end", nil).str("termination"); term != "" {
			break
		}
	}
	end := sc.phase(id, "run_end", nil)
	out.termination = end.str("termination")
	if term != "" && term != out.termination {
		t.Fatalf("termination changed at run_end: %q then %q", term, out.termination)
	}
	got := sc.must(200, "GET", "/v1/runs/"+id, nil)
	out.state = plain(t, got.body["state"])
	out.requests = plain(t, requests)
	return out
}
