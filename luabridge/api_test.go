package luabridge_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type goTool struct {
	name string
	fn   func(args map[string]any) model.ToolResult
}

func (t goTool) Spec() model.ToolSpec { return model.ToolSpec{Name: t.name} }
func (t goTool) Execute(ctx context.Context, in *plugin.Input, args map[string]any, out *command.Command) (model.ToolResult, error) {
	return t.fn(args), nil
}

func TestEveryAPIFunction(t *testing.T) {
	logs := &syncBuffer{}
	l := &luabridge.Loader{Plugins: luabridge.Source{FS: os.DirFS("testdata/api"), Name: "scripts"},
		Log: slog.New(slog.NewTextHandler(logs, nil))}
	g, err := l.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	clock := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	rt, err := run.New(engine.New(g.Set, engine.WithClock(func() time.Time { return clock })),
		run.WithAgents(run.Agent{ID: "default", Configs: map[string]any{"everything": map[string]any{"greeting": "hey", "limit": 2.0}}}))
	if err != nil {
		t.Fatal(err)
	}
	var shellArgs []map[string]any
	shell := goTool{"shell", func(args map[string]any) model.ToolResult {
		shellArgs = append(shellArgs, args)
		return model.Success("listing SECRET")
	}}
	deploys := 0
	deploy := goTool{"deploy", func(args map[string]any) model.ToolResult { deploys++; return model.Success("deployed") }}
	cached := goTool{"cached", func(args map[string]any) model.ToolResult { t.Error("cached ran"); return model.Success(nil) }}
	tools := []plugin.Tool{shell, deploy, cached}

	var reqs []model.Request
	turn := 0
	m := model.ModelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		reqs = append(reqs, req)
		turn++
		switch turn {
		case 1:
			return model.Response{Text: "working", Usage: &model.Usage{TotalTokens: 42}, ToolCalls: []model.ToolCall{
				{Name: "shell", Args: map[string]any{"cmd": "ls"}},
				{Name: "cached", Args: map[string]any{}},
				{Name: "upper", Args: map[string]any{"text": "abc"}},
				{Name: "upper", Args: map[string]any{"text": "fail"}},
			}}, nil
		case 2:
			return model.Response{ToolCalls: []model.ToolCall{{Name: "deploy", Args: map[string]any{}}}}, nil
		}
		return model.Response{Text: "all done"}, nil
	})
	ctx := context.Background()
	res, err := rt.Run(ctx, run.Request{ThreadID: "T", Prompt: "go", Model: m, Tools: tools})
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	if res.Status != run.Waiting || len(res.Suspended) != 1 || res.Suspended[0].Message != "deploy?" ||
		strings.Join(res.Suspended[0].Options, ",") != "yes,no" || res.Suspended[0].Action != "approve" {
		t.Fatalf("expected a suspended deploy: %s %+v", res.Termination, res.Suspended)
	}
	res, err = rt.ResumeRun(ctx, run.ResumeRequest{ThreadID: "T", Model: m, Tools: tools,
		Decisions: []run.ResumeDecision{{Target: res.Suspended[0].ID, Action: "resume"}}})
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	if res.Termination != "stopped:enough" || deploys != 1 {
		t.Fatalf("termination %q deploys %d", res.Termination, deploys)
	}
	st := res.State
	want := map[string]any{
		"everything.steps":  3.0,
		"everything.seen":   []any{"step 1", "step 2", "step 3"},
		"everything.tags":   []any{"shell", "tool", "cached", "upper", "deploy"},
		"everything.info":   map[string]any{"run": res.RunID, "agent": "default", "step": 3.0},
		"everything.max":    30.0,
		"everything.visits": 1.0,
	}
	for k, v := range want {
		if !reflect.DeepEqual(st[k], v) {
			t.Errorf("%s = %#v, want %#v", k, st[k], v)
		}
	}
	logLines := fmt.Sprint(st["everything.log"])
	for _, w := range []string{
		"run_start:run_start:hey:2", fmt.Sprintf("now:%d", clock.Unix()), "messages:1:user", "util:HI!",
		"response:working:4", "tokens:42", "before:shell:true", "after:shell:success", "after:cached:success",
		"tool:upper", "after:upper:success", "after:upper:error", "before:deploy:nil", "after:deploy:success",
	} {
		if !strings.Contains(logLines, w) {
			t.Errorf("log lacks %q: %s", w, logLines)
		}
	}
	if len(shellArgs) != 1 || shellArgs[0]["safe"] != true {
		t.Errorf("the rewrite did not reach the tool: %v", shellArgs)
	}
	// The model saw: the redacted shell result, the cached result, the tool's
	// upper-cased text and its error.
	var toolMsgs []string
	for _, msg := range res.Messages {
		if msg.Role == "tool" {
			toolMsgs = append(toolMsgs, msg.Content)
		}
	}
	wantMsgs := []string{"listing [redacted]", `{"cached":true}`, "ABC", "error: cannot", "deployed"}
	if !reflect.DeepEqual(toolMsgs, wantMsgs) {
		t.Errorf("tool messages %q, want %q", toolMsgs, wantMsgs)
	}
	// Requests: the context message after the prompt's system area, the
	// transform's message last, its temperature, and the plugin tool offered.
	r0 := reqs[0]
	if r0.Messages[0].Content != "be nice" || r0.Messages[len(r0.Messages)-1].Content != fmt.Sprintf("transformed %d", len(r0.Tools)) {
		t.Errorf("request messages %+v", r0.Messages)
	}
	if r0.Params.Temperature == nil || *r0.Params.Temperature != 0.25 {
		t.Errorf("params %+v", r0.Params)
	}
	var offered []string
	for _, ts := range r0.Tools {
		offered = append(offered, ts.Name)
	}
	if !strings.Contains(strings.Join(offered, ","), "upper") {
		t.Errorf("offered %v", offered)
	}
	out := logs.String()
	for _, w := range []string{`msg=observed`, `text="step 1"`, `msg="run ended`, `plugin=everything`, `msg=bye`, `glob=true`, `path=false`} {
		if !strings.Contains(out, w) {
			t.Errorf("logs lack %q:\n%s", w, out)
		}
	}
	// Thread state carries over.
	res2, err := rt.Run(ctx, run.Request{ThreadID: "T", Prompt: "again", Model: scripted(model.Response{Text: "hi"})})
	if err != nil || res2.State["everything.visits"] != 2.0 {
		t.Fatalf("visits = %v (%v)", res2.State["everything.visits"], err)
	}
}

func TestConfigValidateFromLua(t *testing.T) {
	g := mustLoad(t, map[string]string{"v.lua": `local awaken = require("awaken")
local p = awaken.plugin { config = { greeting = { type = "string", default = "hi" } },
  validate = function(c) if c.greeting == "boom" then return { "greeting must not be boom", "really" } end end }
return p`})
	in, ok := g.Set.Plugin("v")
	if !ok || in.Config == nil || in.ValidateConfig == nil {
		t.Fatal("no config schema or validator")
	}
	cfg, err := in.Config.Conform(map[string]any{})
	if err != nil || cfg.(map[string]any)["greeting"] != "hi" {
		t.Fatalf("defaults: %v %v", cfg, err)
	}
	if err := in.ValidateConfig(map[string]any{"greeting": "ok"}); err != nil {
		t.Fatal(err)
	}
	err = in.ValidateConfig(map[string]any{"greeting": "boom"})
	if err == nil || !strings.Contains(err.Error(), "greeting must not be boom") || !strings.Contains(err.Error(), "really") {
		t.Fatalf("err = %v", err)
	}
}
