package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

func TestOneToolRunEventOrder(t *testing.T) {
	rt := newRuntime(t, nil)
	rec := &event.Recorder{}
	echo := newTool("echo", nil)
	res, err := rt.Run(context.Background(), run.Request{Prompt: "hi", Model: turns(calls(call("echo", nil)), text("done")),
		Tools: []plugin.Tool{echo}, Events: rec})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run_start", "step_start", "inference_complete", "tool_call_start", "tool_call_done", "step_end",
		"step_start", "inference_complete", "step_end", "run_finish"}
	if got := names(rec); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	if res.Termination != "natural" || res.Status != run.Done || res.Steps != 2 || echo.runs.Load() != 1 {
		t.Fatalf("result %+v runs %d", res, echo.runs.Load())
	}
	evs := rec.Events()
	if d := evs[4].(event.ToolCallDone); d.CallID != "call_1_1" || d.Status != "succeeded" || d.Result.Data != "echo ok" {
		t.Fatalf("tool_call_done = %+v", d)
	}
	if f := evs[len(evs)-1].(event.RunFinish); f.Termination != "natural" {
		t.Fatalf("run_finish = %+v", f)
	}
	// The model saw the tool's answer as a tool message.
	last := res.Messages[len(res.Messages)-2]
	if last.Role != "tool" || last.ToolCallID != "call_1_1" || last.Content != "echo ok" {
		t.Fatalf("tool message = %+v", last)
	}
}

func TestMaxStepsAndStop(t *testing.T) {
	loopModel := func(n int) *script {
		var rs []model.Response
		for range n {
			rs = append(rs, calls(call("echo", nil)))
		}
		return turns(rs...)
	}
	t.Run("max_steps", func(t *testing.T) {
		rt := newRuntime(t, []run.Option{run.WithAgents(run.Agent{ID: "a", MaxSteps: 3})})
		res, _ := rt.Run(context.Background(), run.Request{Agent: "a", Model: loopModel(10), Tools: []plugin.Tool{newTool("echo", nil)}})
		if res.Termination != "stopped:max_steps" || res.Steps != 3 {
			t.Fatalf("termination %q after %d steps", res.Termination, res.Steps)
		}
	})
	t.Run("plugin stop", func(t *testing.T) {
		var ranRunEnd bool
		rt := newRuntime(t, nil,
			hook("stopper", phase.AfterToolExecute, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
				out.StopRun("enough", "one call is plenty")
				return nil
			}),
			hook("end", phase.RunEnd, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
				ranRunEnd = true
				return nil
			}))
		res, _ := rt.Run(context.Background(), run.Request{Model: loopModel(10), Tools: []plugin.Tool{newTool("echo", nil)}})
		if res.Termination != "stopped:enough" || res.Steps != 1 || !ranRunEnd {
			t.Fatalf("termination %q steps %d run_end %v", res.Termination, res.Steps, ranRunEnd)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		slow := newTool("echo", func(args map[string]any) (model.ToolResult, error) {
			cancel()
			return model.Success("ok"), nil
		})
		var ranRunEnd bool
		rt := newRuntime(t, nil, hook("end", phase.RunEnd, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			ranRunEnd = ctx.Err() == nil
			return nil
		}))
		res, _ := rt.Run(ctx, run.Request{Model: loopModel(10), Tools: []plugin.Tool{slow}})
		if res.Termination != "cancelled" || !ranRunEnd {
			t.Fatalf("termination %q, run_end ran with a live context: %v", res.Termination, ranRunEnd)
		}
	})
	t.Run("model error", func(t *testing.T) {
		rt := newRuntime(t, nil)
		res, _ := rt.Run(context.Background(), run.Request{Model: turns()})
		if res.Termination != "error:model_failed" || !errors.Is(res.Err, errs.ModelFailed) {
			t.Fatalf("termination %q err %v", res.Termination, res.Err)
		}
	})
	t.Run("hook error skips run_end", func(t *testing.T) {
		var ranRunEnd bool
		rt := newRuntime(t, nil,
			hook("bad", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
				return errors.New("broken")
			}),
			hook("end", phase.RunEnd, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
				ranRunEnd = true
				return nil
			}))
		rec := &event.Recorder{}
		res, _ := rt.Run(context.Background(), run.Request{Model: turns(text("x")), Events: rec})
		if res.Termination != "error:hook_failed" || ranRunEnd || res.Status != run.Done {
			t.Fatalf("termination %q run_end %v status %s", res.Termination, ranRunEnd, res.Status)
		}
		if !strings.Contains(res.Err.Error(), "bad/step_start") {
			t.Fatalf("error does not name plugin and phase: %v", res.Err)
		}
		if n := names(rec); n[len(n)-1] != "run_finish" {
			t.Fatalf("events %v", n)
		}
	})
}

func addMsg(key, content, target, kind string, extra map[string]any) map[string]any {
	p := map[string]any{"key": key, "content": content, "target": target, "kind": kind}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func TestContextMessagesOverSixSteps(t *testing.T) {
	// Every step, a hook asks for a throttled reminder (cooldown 3 steps) and
	// on step 1 an ephemeral note and a persistent rule; on step 4 the rule
	// is removed. The tool's result changes the throttled content on step 5.
	content := "stay focused"
	rt := newRuntime(t, nil, hook("ctx", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
		step := in.Run.Step
		if step == 5 {
			content = "stay focused!"
		}
		out.Schedule("runtime.add_context_message", addMsg("r.throttled", content, "suffix_system", "throttled", map[string]any{"cooldown": 3}))
		if step == 1 {
			out.Schedule("runtime.add_context_message", addMsg("r.note", "note", "conversation", "ephemeral", nil))
			out.Schedule("runtime.add_context_message", addMsg("r.rule", "rule B", "system", "persistent", map[string]any{"priority": 1}))
			out.Schedule("runtime.add_context_message", addMsg("r.arule", "rule A", "system", "persistent", map[string]any{"priority": 1}))
			out.Schedule("runtime.add_context_message", addMsg("r.first", "rule 0", "system", "persistent", map[string]any{"priority": -1}))
			out.Schedule("runtime.add_context_message", addMsg("r.session", "session ctx", "session", "persistent", nil))
		}
		if step == 4 {
			out.Schedule("runtime.remove_context_message", map[string]any{"prefix": "r.a"})
			out.Schedule("runtime.remove_context_message", map[string]any{"key": "r.session"})
		}
		return nil
	}))
	var rs []model.Response
	for range 5 {
		rs = append(rs, calls(call("echo", nil)))
	}
	m := turns(append(rs, text("done"))...)
	rt2 := rt
	_, err := rt2.Run(context.Background(), run.Request{Prompt: "go", Model: m, Tools: []plugin.Tool{newTool("echo", nil)},
		Messages: []model.Message{{Role: "system", Content: "extra system"}}})
	if err != nil {
		t.Fatal(err)
	}
	// Render each request as roles and contents, without the conversation's
	// growing tail of assistant/tool messages.
	var got []string
	for _, req := range m.reqs {
		var parts []string
		for _, msg := range req.Messages {
			if msg.Role == "assistant" || msg.Role == "tool" {
				continue
			}
			parts = append(parts, msg.Content)
		}
		got = append(got, strings.Join(parts, " | "))
	}
	want := []string{
		"extra system | rule 0 | rule A | rule B | session ctx | note | go | stay focused",
		"extra system | rule 0 | rule A | rule B | session ctx | go",
		"extra system | rule 0 | rule A | rule B | session ctx | go",
		"extra system | rule 0 | rule B | go | stay focused",
		"extra system | rule 0 | rule B | go | stay focused!",
		"extra system | rule 0 | rule B | go",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSystemPromptPlacement(t *testing.T) {
	rt := newRuntime(t, []run.Option{run.WithAgents(run.Agent{ID: "a", SystemPrompt: "You are helpful."})},
		hook("ctx", phase.BeforeInference, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Schedule("runtime.add_context_message", addMsg("s", "SYS", "system", "ephemeral", nil))
			out.Schedule("runtime.add_context_message", addMsg("c", "CONV", "conversation", "ephemeral", map[string]any{"role": "user"}))
			out.Schedule("runtime.add_context_message", addMsg("z", "SUFFIX", "suffix_system", "ephemeral", nil))
			return nil
		}))
	m := turns(text("ok"))
	if _, err := rt.Run(context.Background(), run.Request{Agent: "a", Prompt: "hello", Model: m}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, msg := range m.reqs[0].Messages {
		got = append(got, msg.Role+":"+msg.Content)
	}
	want := []string{"system:You are helpful.", "system:SYS", "user:CONV", "user:hello", "system:SUFFIX"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestToolFiltersOverridesAndTransforms(t *testing.T) {
	var order []string
	var mu sync.Mutex
	transform := func(id string) plugin.Plugin {
		return plugin.New(id, func(r *plugin.Registrar) error {
			return r.Transform(plugin.RequestTransformFunc(func(ctx context.Context, in *plugin.Input, req model.Request) (model.Request, error) {
				mu.Lock()
				order = append(order, id)
				mu.Unlock()
				req.Messages = append(req.Messages, model.Message{Role: "system", Content: "from " + id})
				return req, nil
			}), errs.Pos{})
		})
	}
	rt := newRuntime(t, nil,
		hook("a", phase.BeforeInference, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Schedule("runtime.include_only_tools", []any{"t1", "t2"})
			out.Schedule("runtime.set_inference_override", map[string]any{"temperature": 0.5, "model": "small"})
			return nil
		}),
		hook("b", phase.BeforeInference, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Schedule("runtime.include_only_tools", []any{"t3", "t2"})
			out.Schedule("runtime.exclude_tool", "t2")
			out.Schedule("runtime.set_inference_override", map[string]any{"model": "large", "max_tokens": 100})
			return nil
		}),
		transform("tr1"), transform("tr2"),
	)
	m := turns(text("ok"), text("ok"))
	var tools []plugin.Tool
	for _, n := range []string{"t1", "t2", "t3", "t4"} {
		tools = append(tools, newTool(n, nil))
	}
	temp := 1.0
	if _, err := rt.Run(context.Background(), run.Request{Model: m, Tools: tools, Params: model.Params{Temperature: &temp, TopP: ptr(0.9)}}); err != nil {
		t.Fatal(err)
	}
	req := m.reqs[0]
	var got []string
	for _, ts := range req.Tools {
		got = append(got, ts.Name)
	}
	if !reflect.DeepEqual(got, []string{"t1", "t3"}) {
		t.Fatalf("tools = %v (include-only union t1,t2,t3 minus t2)", got)
	}
	p := req.Params
	if p.Model != "large" || *p.Temperature != 0.5 || *p.MaxTokens != 100 || *p.TopP != 0.9 {
		t.Fatalf("params = model %q temp %v max %v top_p %v", p.Model, *p.Temperature, p.MaxTokens, *p.TopP)
	}
	n := len(req.Messages)
	if req.Messages[n-2].Content != "from tr1" || req.Messages[n-1].Content != "from tr2" || strings.Join(order, ",") != "tr1,tr2" {
		t.Fatalf("transform order: %v / %v", order, req.Messages)
	}
}

func ptr[T any](v T) *T { return &v }

func TestUnknownOverrideFieldIsDeadLettered(t *testing.T) {
	rt := newRuntime(t, nil, hook("a", phase.BeforeInference, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
		out.Schedule("runtime.set_inference_override", map[string]any{"temprature": 0.5})
		return nil
	}))
	m := turns(text("ok"))
	res, err := rt.Run(context.Background(), run.Request{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	failed, _ := res.State["__runtime.failed_actions"].([]any)
	if len(failed) != 1 || !strings.Contains(fmt.Sprint(failed[0]), "temprature") {
		t.Fatalf("failed actions = %v", failed)
	}
	if m.reqs[0].Params.Temperature != nil {
		t.Fatal("a bad override was applied")
	}
}

func TestBlockInterruptsTheBatch(t *testing.T) {
	var afterFor []string
	var mu sync.Mutex
	rt := newRuntime(t, nil,
		gateFn("guard", func(in *plugin.Input) gate.Decision {
			if in.Tool.Call.Name == "rm" {
				return gate.Decision{Kind: gate.Block, Reason: "rm is not allowed"}
			}
			return gate.Decision{}
		}),
		hook("watch", phase.AfterToolExecute, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			mu.Lock()
			afterFor = append(afterFor, in.Tool.Call.Name+":"+in.Tool.Result.Status)
			mu.Unlock()
			return nil
		}))
	ls, rm, cat := newTool("ls", nil), newTool("rm", nil), newTool("cat", nil)
	rec := &event.Recorder{}
	res, _ := rt.Run(context.Background(), run.Request{Model: turns(calls(call("ls", nil), call("rm", nil), call("cat", nil))),
		Tools: []plugin.Tool{ls, rm, cat}, Events: rec})
	if res.Termination != "blocked:rm is not allowed" {
		t.Fatalf("termination %q", res.Termination)
	}
	if ls.runs.Load() != 1 || rm.runs.Load() != 0 || cat.runs.Load() != 0 {
		t.Fatalf("runs ls=%d rm=%d cat=%d", ls.runs.Load(), rm.runs.Load(), cat.runs.Load())
	}
	if strings.Join(afterFor, ",") != "ls:success,rm:error" {
		t.Fatalf("after_tool_execute ran for %v", afterFor)
	}
	var done []string
	for _, ev := range rec.Events() {
		if d, ok := ev.(event.ToolCallDone); ok {
			done = append(done, fmt.Sprintf("%s=%s:%s", d.CallID, d.Status, d.Result.Message))
		}
	}
	want := "call_1_1=succeeded:,call_1_2=failed:rm is not allowed,call_1_3=failed:[tool execution was interrupted]"
	if strings.Join(done, ",") != want {
		t.Fatalf("done events %v", done)
	}
	if n := names(rec); strings.Contains(strings.Join(n, ","), "step_end") {
		t.Fatalf("a blocked run must not end the step: %v", n)
	}
}

func TestSetResultSkipsTheTool(t *testing.T) {
	var before []string
	rt := newRuntime(t, nil,
		gateFn("cache", func(in *plugin.Input) gate.Decision {
			return gate.Decision{Kind: gate.SetResult, Result: &model.ToolResult{Status: "success", Data: "cached"}}
		}),
		hook("b", phase.BeforeToolExecute, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			before = append(before, in.Tool.Call.Name)
			return nil
		}))
	fetch := newTool("fetch", nil)
	res, _ := rt.Run(context.Background(), run.Request{Model: turns(calls(call("fetch", nil)), text("ok")), Tools: []plugin.Tool{fetch}})
	if fetch.runs.Load() != 0 || len(before) != 0 || res.Termination != "natural" {
		t.Fatalf("runs=%d before=%v termination=%q", fetch.runs.Load(), before, res.Termination)
	}
	if msg := res.Messages[len(res.Messages)-2]; msg.Content != "cached" {
		t.Fatalf("tool message %+v", msg)
	}
}

func TestBatchOrderFlushAndRegate(t *testing.T) {
	// b is suspended only if a has already run (state written by a's tool
	// run through after_tool_execute). Gated before a ran, b would pass.
	rt := newRuntime(t, nil,
		keys("k", state.Spec{Name: "seen.a", Scope: state.ScopeRun}),
		hook("mark", phase.AfterToolExecute, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			if in.Tool.Call.Name == "a" {
				out.Update("seen.a", true)
			}
			return nil
		}),
		gateFn("order", func(in *plugin.Input) gate.Decision {
			if in.Tool.Call.Name == "b" {
				if v, _ := in.Snap.Lookup("seen.a"); v == true {
					return gate.Decision{Kind: gate.Block, Reason: "b after a"}
				}
				return gate.Decision{Kind: gate.SetResult, Result: &model.ToolResult{Status: "success", Data: "early"}}
			}
			return gate.Decision{}
		}))
	a, b := newTool("a", nil), newTool("b", nil)
	res, _ := rt.Run(context.Background(), run.Request{Model: turns(calls(call("a", nil), call("b", nil))), Tools: []plugin.Tool{a, b}})
	if a.runs.Load() != 1 || res.Termination != "blocked:b after a" {
		t.Fatalf("a runs %d, termination %q: the decision on b must be re-evaluated after a ran", a.runs.Load(), res.Termination)
	}
}

func TestUnofferedToolFails(t *testing.T) {
	rt := newRuntime(t, nil, hook("f", phase.BeforeInference, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
		out.Schedule("runtime.exclude_tool", "secret")
		return nil
	}))
	secret := newTool("secret", nil)
	res, _ := rt.Run(context.Background(), run.Request{Model: turns(calls(call("secret", nil), call("ghost", nil)), text("ok")),
		Tools: []plugin.Tool{secret, newTool("other", nil)}})
	if secret.runs.Load() != 0 {
		t.Fatal("an excluded tool ran")
	}
	var toolMsgs []string
	for _, m := range res.Messages {
		if m.Role == "tool" {
			toolMsgs = append(toolMsgs, m.Content)
		}
	}
	if len(toolMsgs) != 2 || !strings.Contains(toolMsgs[0], `"secret" is not available`) || !strings.Contains(toolMsgs[1], `"ghost" is not available`) {
		t.Fatalf("tool messages %v", toolMsgs)
	}
}

func TestToolErrorsBecomeResults(t *testing.T) {
	boom := newTool("boom", func(args map[string]any) (model.ToolResult, error) {
		return model.ToolResult{}, errors.New("disk full")
	})
	panicky := newTool("panicky", func(args map[string]any) (model.ToolResult, error) { panic("nil map") })
	rt := newRuntime(t, nil)
	res, _ := rt.Run(context.Background(), run.Request{Model: turns(calls(call("boom", nil), call("panicky", nil)), text("ok")),
		Tools: []plugin.Tool{boom, panicky}})
	var got []string
	for _, m := range res.Messages {
		if m.Role == "tool" {
			got = append(got, m.Content)
		}
	}
	if res.Termination != "natural" || len(got) != 2 || got[0] != "error: disk full" || !strings.Contains(got[1], "panicked: nil map") {
		t.Fatalf("termination %q messages %v", res.Termination, got)
	}
}

func approver(id string) plugin.Plugin {
	return gateFn(id, func(in *plugin.Input) gate.Decision {
		if in.Tool.Call.Name != "deploy" {
			return gate.Decision{}
		}
		if r := in.Tool.Resume; r != nil {
			if r.Action == "resume" {
				return gate.Decision{}
			}
		}
		return gate.Decision{Kind: gate.Suspend, Ticket: &gate.Ticket{ID: "t-" + in.Tool.Call.ID, Message: "deploy to prod?",
			Options: []string{"yes", "no"}}}
	})
}

func TestSuspendResumeAndCancel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		decision run.ResumeDecision
		runs     int32
		status   string
	}{
		{"resume by call id", run.ResumeDecision{Target: "call_1_1", Action: "resume"}, 1, "succeeded"},
		{"resume by ticket id", run.ResumeDecision{Target: "t-call_1_1", Action: "resume"}, 1, "succeeded"},
		{"cancel", run.ResumeDecision{Target: "call_1_1", Action: "cancel", Reason: "not today"}, 0, "cancelled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, nil, approver("ask"))
			deploy, ls := newTool("deploy", nil), newTool("ls", nil)
			rec := &event.Recorder{}
			res, _ := rt.Run(context.Background(), run.Request{ThreadID: "th", Model: turns(calls(call("deploy", nil), call("ls", nil))),
				Tools: []plugin.Tool{deploy, ls}, Events: rec})
			if res.Termination != "suspended" || res.Status != run.Waiting || len(res.Suspended) != 1 || res.Suspended[0].ID != "t-call_1_1" {
				t.Fatalf("first run: %q %s %+v", res.Termination, res.Status, res.Suspended)
			}
			if ls.runs.Load() != 1 || deploy.runs.Load() != 0 {
				t.Fatal("later calls must still run while one is suspended")
			}
			// Another run on a waiting thread is refused.
			if _, err := rt.Run(context.Background(), run.Request{ThreadID: "th", Model: turns(text("x"))}); !errors.Is(err, errs.InvalidTransition) {
				t.Fatalf("run on a waiting thread: %v", err)
			}
			res2, err := rt.ResumeRun(context.Background(), run.ResumeRequest{ThreadID: "th", Decisions: []run.ResumeDecision{tc.decision},
				Model: turns(text("deployed")), Tools: []plugin.Tool{deploy, ls}, Events: rec})
			if err != nil {
				t.Fatal(err)
			}
			if res2.Termination != "natural" || deploy.runs.Load() != tc.runs || res2.RunID != res.RunID {
				t.Fatalf("after resume: %q runs=%d run %s vs %s", res2.Termination, deploy.runs.Load(), res2.RunID, res.RunID)
			}
			var last event.ToolCallDone
			for _, ev := range rec.Events() {
				if d, ok := ev.(event.ToolCallDone); ok && d.CallID == "call_1_1" {
					last = d
				}
			}
			if last.Status != tc.status {
				t.Fatalf("final status of the suspended call: %+v", last)
			}
		})
	}
}

func TestResumeModes(t *testing.T) {
	suspender := func(mode gate.ResumeMode) plugin.Plugin {
		return gateFn("ask", func(in *plugin.Input) gate.Decision {
			if in.Tool.Resume != nil {
				return gate.Decision{}
			}
			return gate.Decision{Kind: gate.Suspend, Ticket: &gate.Ticket{ResumeMode: mode}}
		})
	}
	for _, tc := range []struct {
		mode     gate.ResumeMode
		runs     int32
		toolSaw  any
		modelSaw string
	}{
		{gate.Replay, 1, nil, "tool ran"},
		{gate.UseDecisionAsResult, 0, nil, `{"answer":42}`},
		{gate.PassDecisionToTool, 1, map[string]any{"answer": 42.0}, "tool ran"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			var saw any
			tl := newTool("q", func(args map[string]any) (model.ToolResult, error) {
				saw = args["decision"]
				return model.Success("tool ran"), nil
			})
			rt := newRuntime(t, nil, suspender(tc.mode))
			res, _ := rt.Run(context.Background(), run.Request{Model: turns(calls(call("q", map[string]any{"x": 1}))), Tools: []plugin.Tool{tl}})
			if res.Status != run.Waiting {
				t.Fatalf("status %s", res.Status)
			}
			res2, err := rt.ResumeRun(context.Background(), run.ResumeRequest{RunID: res.RunID,
				Decisions: []run.ResumeDecision{{Target: res.Suspended[0].ID, Action: "resume", Result: map[string]any{"answer": 42}}},
				Model:     turns(text("ok")), Tools: []plugin.Tool{tl}})
			if err != nil {
				t.Fatal(err)
			}
			if tl.runs.Load() != tc.runs || !reflect.DeepEqual(saw, tc.toolSaw) {
				t.Fatalf("runs %d saw %v", tl.runs.Load(), saw)
			}
			var toolMsg string
			for _, m := range res2.Messages {
				if m.Role == "tool" {
					toolMsg = m.Content
				}
			}
			if toolMsg != tc.modelSaw {
				t.Fatalf("model saw %q", toolMsg)
			}
		})
	}
}

func TestUnknownResumeTargetCommitsNothing(t *testing.T) {
	rt := newRuntime(t, nil, approver("ask"))
	res, _ := rt.Run(context.Background(), run.Request{Model: turns(calls(call("deploy", nil))), Tools: []plugin.Tool{newTool("deploy", nil)}})
	s, err := rt.Restore(context.Background(), res.RunID, nil)
	if err != nil {
		t.Fatal(err)
	}
	rev := s.Revision()
	_, _, err = s.Resume(context.Background(), []run.ResumeDecision{{Target: "call_1_1", Action: "resume"}, {Target: "nope", Action: "resume"}})
	if !errors.Is(err, errs.UnknownResumeTarget) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("err = %v", err)
	}
	if s.Revision() != rev || s.Status() != run.Waiting || s.Calls()[0].Status != run.CallSuspended {
		t.Fatalf("a failed resume changed the run: rev %d->%d status %s call %s", rev, s.Revision(), s.Status(), s.Calls()[0].Status)
	}
}

func TestSessionEnforcesPhaseOrder(t *testing.T) {
	rt := newRuntime(t, nil)
	ctx := context.Background()
	s, _, err := rt.Start(ctx, run.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(err error) {
		t.Helper()
		if !errors.Is(err, errs.InvalidTransition) {
			t.Fatalf("err = %v, want invalid_transition", err)
		}
	}
	_, _, err = s.BeforeInference(ctx, model.Request{})
	check(err)
	_, err = s.StepEnd(ctx)
	check(err)
	_, err = s.RunEnd(ctx)
	check(err)
	if _, err := s.StepStart(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = s.StepStart(ctx)
	check(err)
	if _, _, err := s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "ls"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterInference(ctx, calls(call("ls", nil))); err != nil {
		t.Fatal(err)
	}
	_, err = s.BeforeToolExecute(ctx, model.ToolCall{ID: "call_1_1"})
	check(err)
	_, err = s.StepEnd(ctx) // the call has not been gated
	check(err)
	d, _, err := s.ToolGate(ctx, model.ToolCall{ID: "call_1_1", Name: "ls"})
	if err != nil || d.Decision != gate.Allow {
		t.Fatalf("gate %+v %v", d, err)
	}
	rev := s.Revision()
	again, _, err := s.ToolGate(ctx, model.ToolCall{ID: "call_1_1", Name: "ls"})
	if err != nil || again.Decision != gate.Allow || s.Revision() != rev {
		t.Fatal("gating again must return the same decision and change nothing")
	}
	_, _, err = s.AfterToolExecute(ctx, model.ToolCall{ID: "call_1_1"}, model.Success("x"))
	check(err) // before_tool_execute has not run
	if _, err := s.BeforeToolExecute(ctx, model.ToolCall{ID: "call_1_1"}); err != nil {
		t.Fatal(err)
	}
	_, err = s.BeforeToolExecute(ctx, model.ToolCall{ID: "call_1_1"})
	check(err)
	if _, _, err := s.AfterToolExecute(ctx, model.ToolCall{ID: "call_1_1"}, model.Success("x")); err != nil {
		t.Fatal(err)
	}
	if out, err := s.StepEnd(ctx); err != nil || out.Termination != "" {
		t.Fatalf("step_end %v %v", out, err)
	}
	_, _, err = s.Resume(ctx, nil)
	check(err)
	if _, err := s.StepStart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.BeforeInference(ctx, model.Request{}); err != nil {
		t.Fatal(err)
	}
	if out, err := s.AfterInference(ctx, text("bye")); err != nil || out.Termination != "" {
		t.Fatal(err)
	}
	if out, _ := s.StepEnd(ctx); out.Termination != "natural" {
		t.Fatalf("termination %q", out.Termination)
	}
	_, err = s.StepStart(ctx)
	check(err)
	if _, err := s.RunEnd(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = s.RunEnd(ctx)
	check(err)
	if s.Status() != run.Done {
		t.Fatal(s.Status())
	}
}

func TestThreadAndRunScope(t *testing.T) {
	counter := func(name string, scope state.Scope) state.Spec {
		return state.Spec{Name: name, Scope: scope, Reducer: "add"}
	}
	rt := newRuntime(t, nil,
		keys("k", counter("c.run", state.ScopeRun), counter("c.thread", state.ScopeThread)),
		hook("count", phase.RunStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("c.run", 1)
			out.Update("c.thread", 1)
			return nil
		}))
	get := func(res run.Result, k string) any { return res.State[k] }
	var results []run.Result
	for _, th := range []string{"A", "A", "B"} {
		res, err := rt.Run(context.Background(), run.Request{ThreadID: th, Prompt: "hi " + th, Model: turns(text("ok"))})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	if get(results[0], "c.run") != 1.0 || get(results[1], "c.run") != 1.0 || get(results[2], "c.run") != 1.0 {
		t.Fatal("run keys must start fresh every run")
	}
	if get(results[0], "c.thread") != 1.0 || get(results[1], "c.thread") != 2.0 || get(results[2], "c.thread") != 1.0 {
		t.Fatalf("thread keys: %v %v %v", get(results[0], "c.thread"), get(results[1], "c.thread"), get(results[2], "c.thread"))
	}
	// The thread's conversation carries over.
	var users []string
	for _, m := range results[1].Messages {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	if strings.Join(users, ",") != "hi A,hi A" {
		t.Fatalf("thread A conversation: %v", users)
	}
}

func TestThreadValueThatNoLongerFitsIsKeptAside(t *testing.T) {
	store := run.NewMemoryStore()
	if _, err := store.PutThread(context.Background(), run.Thread{ID: "T", Values: map[string]any{"n.count": "seven", "gone.key": 1.0}}); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, []run.Option{run.WithStore(store)},
		keys("n", state.Spec{Name: "n.count", Scope: state.ScopeThread, Reducer: "add", Default: 10.0,
			Schema: schema.MustCompile(map[string]any{"type": "integer"})}),
		hook("inc", phase.RunStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("n.count", 1)
			return nil
		}))
	res, err := rt.Run(context.Background(), run.Request{ThreadID: "T", Model: turns(text("ok"))})
	if err != nil {
		t.Fatal(err)
	}
	if res.State["n.count"] != 11.0 {
		t.Fatalf("n.count = %v, want 11 (default 10 + 1)", res.State["n.count"])
	}
	th, _, _ := store.Thread(context.Background(), "T")
	if th.Aside["n.count"] != "seven" || th.Values["gone.key"] != 1.0 || th.Values["n.count"] != 11.0 {
		t.Fatalf("thread = %+v", th)
	}
}

func TestGateSeesResumeAndRewrite(t *testing.T) {
	var sawResume []string
	var mu sync.Mutex
	rt := newRuntime(t, nil,
		gateFn("rw", func(in *plugin.Input) gate.Decision {
			if in.Tool.Call.Args["safe"] == nil {
				return gate.Decision{Kind: gate.Rewrite, Args: map[string]any{"cmd": in.Tool.Call.Args["cmd"], "safe": true}}
			}
			return gate.Decision{}
		}),
		gateFn("ask", func(in *plugin.Input) gate.Decision {
			mu.Lock()
			defer mu.Unlock()
			if in.Tool.Resume != nil {
				sawResume = append(sawResume, in.Tool.Resume.Action)
				return gate.Decision{}
			}
			return gate.Decision{Kind: gate.Suspend}
		}))
	var args []map[string]any
	sh := newTool("sh", func(a map[string]any) (model.ToolResult, error) {
		args = append(args, a)
		return model.Success("ok"), nil
	})
	rec := &event.Recorder{}
	res, _ := rt.Run(context.Background(), run.Request{Model: turns(calls(call("sh", map[string]any{"cmd": "ls"}))), Tools: []plugin.Tool{sh}, Events: rec})
	if res.Status != run.Waiting {
		t.Fatal(res.Termination)
	}
	if _, err := rt.ResumeRun(context.Background(), run.ResumeRequest{RunID: res.RunID, Decisions: []run.ResumeDecision{{Target: "call_1_1", Action: "resume"}},
		Model: turns(text("ok")), Tools: []plugin.Tool{sh}, Events: rec}); err != nil {
		t.Fatal(err)
	}
	if len(args) != 1 || args[0]["safe"] != true || args[0]["cmd"] != "ls" || strings.Join(sawResume, ",") == "" {
		t.Fatalf("tool args %v, gate saw resume %v", args, sawResume)
	}
	var decisions []string
	for _, ev := range rec.Events() {
		if d, ok := ev.(event.GateDecision); ok {
			decisions = append(decisions, d.Decision+"/"+d.Plugin)
		}
	}
	if strings.Join(decisions, ",") != "suspend/ask,rewrite/rw" {
		t.Fatalf("gate decisions %v", decisions)
	}
}

// Result transforms run in registration order on a tool's result, after
// after_tool_execute, and the model sees what the last one returned.
func TestResultTransformsRunInOrder(t *testing.T) {
	redact := func(id, from, to string) plugin.Plugin {
		return plugin.New(id, func(r *plugin.Registrar) error {
			return r.ResultTransform(plugin.ResultTransformFunc(func(ctx context.Context, in *plugin.Input, call model.ToolCall, res model.ToolResult) (model.ToolResult, error) {
				res.Data = strings.ReplaceAll(res.Data.(string), from, to)
				return res, nil
			}), errs.Pos{})
		})
	}
	rt := newRuntime(t, nil, redact("a", "secret", "[a]"), redact("b", "[a]", "[b]"))
	m := turns(calls(call("read", nil)), text("ok"))
	read := newTool("read", func(map[string]any) (model.ToolResult, error) { return model.Success("the secret is here"), nil })
	if _, err := rt.Run(context.Background(), run.Request{Model: m, Tools: []plugin.Tool{read}}); err != nil {
		t.Fatal(err)
	}
	msgs := m.reqs[1].Messages
	if got := msgs[len(msgs)-1].Content; got != "the [b] is here" {
		t.Fatalf("the model saw %q", got)
	}
}

// An agent's model and temperature reach the request unless the request
// sets them; a plugin's inference override applies last.
func TestAgentParamsReachTheRequest(t *testing.T) {
	cold, warm := 0.1, 0.9
	agent := run.Agent{ID: "default", MaxSteps: 4, Params: run.ModelParams{Model: "small", Temperature: &cold}}
	override := hook("o", phase.BeforeInference, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
		if in.Run.Step == 3 {
			out.Schedule("runtime.set_inference_override", map[string]any{"model": "large"})
		}
		return nil
	})
	rt := newRuntime(t, []run.Option{run.WithAgents(agent)}, override)
	for _, tc := range []struct {
		name      string
		params    model.Params
		wantModel string
		wantTemp  float64
	}{
		{"the agent's defaults", model.Params{}, "small", cold},
		{"the request's own", model.Params{Model: "mine", Temperature: &warm}, "mine", warm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := turns(calls(call("x", nil)), calls(call("x", nil)), text("ok"))
			x := newTool("x", nil)
			if _, err := rt.Run(context.Background(), run.Request{Model: m, Tools: []plugin.Tool{x}, Params: tc.params}); err != nil {
				t.Fatal(err)
			}
			for i, req := range m.reqs[:2] {
				if req.Params.Model != tc.wantModel || req.Params.Temperature == nil || *req.Params.Temperature != tc.wantTemp {
					t.Fatalf("request %d: params %+v", i+1, req.Params)
				}
			}
			if m.reqs[2].Params.Model != "large" {
				t.Fatalf("the override did not apply last: %+v", m.reqs[2].Params)
			}
		})
	}
}

// BeforeInference says which context messages it placed, so a host that
// cannot send the request itself (a hook adapter) can pass them on.
func TestBeforeInferenceReturnsTheContextItPlaced(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, nil, hook("ctx", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
		out.Schedule("runtime.add_context_message", addMsg("r.note", "run the tests", "conversation", "ephemeral", nil))
		return nil
	}))
	s, _, err := rt.Start(ctx, run.StartOptions{Messages: []model.Message{{Role: "user", Content: "go"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StepStart(ctx); err != nil {
		t.Fatal(err)
	}
	req, o, err := s.BeforeInference(ctx, model.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(o.Context); string(got) != `[{"role":"system","content":"run the tests"}]` {
		t.Errorf("placed %s", got)
	}
	if n := len(req.Messages); n != 2 {
		t.Errorf("the request holds %d messages, want the prompt and the note", n)
	}
}

// A new run on a thread starts with the agent's system prompt once, then
// the thread's saved conversation, then the new messages: the prompt the
// thread saved is not repeated.
func TestConversationOnAThread(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, []run.Option{run.WithAgents(run.Agent{ID: "a", SystemPrompt: "You are helpful."})})
	if _, err := rt.Run(ctx, run.Request{Agent: "a", ThreadID: "t", Prompt: "hello", Model: turns(text("hi"))}); err != nil {
		t.Fatal(err)
	}
	msgs, err := rt.Conversation(ctx, "a", "t", []model.Message{{Role: "user", Content: "again"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Role+":"+m.Content)
	}
	want := []string{"system:You are helpful.", "user:hello", "assistant:hi", "user:again"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := rt.Conversation(ctx, "nobody", "", nil); err == nil {
		t.Fatal("an unknown agent has a conversation")
	}
}
