package run

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
)

// Request starts an autonomous run.
type Request struct {
	Agent    string
	ThreadID string // reuse a thread's state and conversation; empty: a new thread
	RunID    string
	// Prompt is appended as a user message.
	Prompt string
	// Messages come after the system prompt and the thread's conversation,
	// before the prompt.
	Messages []model.Message
	Model    model.Model
	// Tools are offered besides the agent's host tools and plugin tools.
	Tools  []plugin.Tool
	Params model.Params
	Events event.Sink
	// OnEffect, when set, sees each effect as it is dispatched.
	OnEffect func(key string, payload any)
}

// ResumeRequest continues a waiting run.
type ResumeRequest struct {
	// RunID names the run; with ThreadID instead, the thread's waiting run.
	RunID     string
	ThreadID  string
	Decisions []ResumeDecision
	Model     model.Model
	Tools     []plugin.Tool
	Params    model.Params
	Events    event.Sink
	OnEffect  func(key string, payload any)
}

// Result is how an autonomous run ended (or paused).
type Result struct {
	RunID       string
	ThreadID    string
	Termination string
	Status      Status
	Steps       int
	Messages    []model.Message
	Requests    []model.Request // every request as the model received it
	Suspended   []gate.Ticket
	// Expired lists the calls whose approval expired and which the runtime
	// decided for (their tickets' on_timeout) while Run or ResumeRun drove
	// the run.
	Expired []string
	State   map[string]any
	Session *Session
	// Err is the first error the run met, if any: the one that ended it
	// "error:<code>", or one after the run ended another way, such as
	// run_end's thread save refused with revision_conflict because another
	// run saved the thread meanwhile (this run's thread state was not
	// kept; run again). Check it whatever Termination says.
	Err error
}

// Run runs an agent autonomously: steps until the model answers without
// tool calls, a plugin stops the run, a call is blocked, max_steps is
// reached, the context is cancelled, or calls are suspended (the run then
// waits; see ResumeRun). The returned error is set only when the run could
// not start; a run that ends in error reports it in Result.Err.
func (r *Runtime) Run(ctx context.Context, req Request) (Result, error) {
	if req.Model == nil {
		return Result{}, errs.New(errs.ConfigInvalid, "a run needs a model")
	}
	msgs, err := r.Conversation(ctx, req.Agent, req.ThreadID, req.Messages)
	if err != nil {
		return Result{}, err
	}
	if req.Prompt != "" {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: req.Prompt})
	}
	l := &loop{model: req.Model, extra: req.Tools, params: req.Params}
	s, _, err := r.Start(ctx, StartOptions{Agent: req.Agent, ThreadID: req.ThreadID, RunID: req.RunID, Messages: msgs,
		Events: req.Events, OnEffect: req.OnEffect})
	if s == nil {
		return Result{}, err
	}
	l.s = s
	l.err = err
	l.drive(ctx)
	return l.result(), nil
}

// Conversation is what a new run of agent on thread starts with: the
// agent's system prompt, the thread's saved conversation (without a second
// copy of that prompt), then msgs. Every host starts runs with it, so a
// run reads the same in process and over HTTP. "" is the default agent.
func (r *Runtime) Conversation(ctx context.Context, agent, threadID string, msgs []model.Message) ([]model.Message, error) {
	a, err := r.agent(agent)
	if err != nil {
		return nil, err
	}
	var out []model.Message
	if a.SystemPrompt != "" {
		out = append(out, model.Message{Role: model.RoleSystem, Content: a.SystemPrompt})
	}
	if threadID != "" {
		prior, err := r.ThreadMessages(ctx, threadID)
		if err != nil {
			return nil, err
		}
		for _, m := range prior {
			if len(out) > 0 && m.Role == model.RoleSystem && m.Content == a.SystemPrompt {
				continue // the system prompt is already first
			}
			out = append(out, m)
		}
	}
	return append(out, msgs...), nil
}

// ResumeRun applies decisions to a waiting run and drives it on.
func (r *Runtime) ResumeRun(ctx context.Context, req ResumeRequest) (Result, error) {
	if req.Model == nil {
		return Result{}, errs.New(errs.ConfigInvalid, "a run needs a model")
	}
	id := req.RunID
	if id == "" {
		th, ok, err := r.store.Thread(ctx, req.ThreadID)
		if err != nil {
			return Result{}, err
		}
		if !ok || th.Waiting == "" {
			return Result{}, errs.New(errs.UnknownResumeTarget, "thread %q has no run waiting for decisions", req.ThreadID)
		}
		id = th.Waiting
	}
	s, err := r.Restore(ctx, id, req.Events, req.OnEffect)
	if err != nil {
		return Result{}, err
	}
	if _, _, err := s.Resume(ctx, req.Decisions); err != nil {
		return Result{}, err
	}
	l := &loop{s: s, model: req.Model, extra: req.Tools, params: req.Params}
	l.drive(ctx)
	return l.result(), nil
}

type loop struct {
	s        *Session
	model    model.Model
	extra    []plugin.Tool
	params   model.Params
	requests []model.Request
	err      error
}

func (l *loop) result() Result {
	s := l.s
	return Result{RunID: s.info.ID, ThreadID: s.info.ThreadID, Termination: s.termination, Status: s.status,
		Steps: s.info.Step, Messages: s.Messages(), Requests: l.requests, Suspended: s.Suspended(),
		Expired: s.ExpiredCalls(), State: s.State(), Session: s, Err: l.err}
}

// drive runs the session until it is done or waiting.
func (l *loop) drive(ctx context.Context) {
	s := l.s
	note := func(err error) bool {
		if err != nil && l.err == nil {
			l.err = err
		}
		return err != nil || s.Status() != Running || s.Termination() != ""
	}
	if s.Status() == Running && s.Stage() == StageInferred && s.Termination() == "" {
		// A resumed run: finish the open step.
		if note(s.RunCalls(ctx, l.execute)) {
			l.end(ctx)
			return
		}
		if _, err := s.StepEnd(ctx); note(err) {
			l.end(ctx)
			return
		}
	}
	for s.Status() == Running && s.Termination() == "" {
		if err := ctx.Err(); err != nil {
			s.Terminate(Termination{Kind: Cancelled})
			break
		}
		if _, err := s.StepStart(ctx); note(err) {
			break
		}
		// No messages: the run's own conversation, which the session keeps
		// (sending it back would replace it with a copy of itself).
		req, _, err := s.BeforeInference(ctx, model.Request{Tools: l.specs(), Params: l.params})
		if note(err) {
			break
		}
		l.requests = append(l.requests, req)
		resp, err := l.model.Infer(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				s.Terminate(Termination{Kind: Cancelled})
			} else {
				code := errs.CodeOf(err)
				if code == "" {
					code = errs.ModelFailed
					err = errs.Wrap(errs.ModelFailed, err, "the model failed")
				}
				s.Terminate(Termination{Kind: Errored, Detail: string(code)})
				l.err = err
			}
			break
		}
		if _, err := s.AfterInference(ctx, resp); err != nil && errs.CodeOf(err) == errs.BadRequest {
			// The model's answer is what was refused (a call without a
			// name, two calls with one id): the model failed.
			s.Terminate(Termination{Kind: Errored, Detail: string(errs.ModelFailed)})
			l.err = errs.Wrap(errs.ModelFailed, err, "the model's response was refused")
			break
		} else if note(err) {
			break
		}
		if note(s.RunCalls(ctx, l.execute)) {
			break
		}
		if _, err := s.StepEnd(ctx); note(err) {
			break
		}
	}
	l.end(ctx)
}

func (l *loop) end(ctx context.Context) {
	s := l.s
	if s.Status() != Running {
		return
	}
	if ctx.Err() != nil {
		s.Terminate(Termination{Kind: Cancelled})
	}
	if _, err := s.RunEnd(ctx); err != nil && l.err == nil {
		l.err = err
	}
}

// specs lists the tools offered to the model: the agent's host tools, the
// active plugins' tools, then the run's extra tools.
func (l *loop) specs() []model.ToolSpec {
	var out []model.ToolSpec
	a := l.s.agent
	for _, name := range a.Tools {
		out = append(out, l.s.rt.tools[name].Spec())
	}
	for _, t := range a.view.Tools() {
		out = append(out, t.Tool.Spec())
	}
	for _, t := range l.extra {
		out = append(out, t.Spec())
	}
	return out
}

func (l *loop) tool(name string) (plugin.Tool, bool) {
	for _, t := range l.extra {
		if t.Spec().Name == name {
			return t, true
		}
	}
	return l.s.tool(name)
}

// execute runs a tool; its failures become error results the model sees.
func (l *loop) execute(ctx context.Context, call model.ToolCall) (res model.ToolResult) {
	t, ok := l.tool(call.Name)
	if !ok {
		return model.Error(fmt.Sprintf("tool %q does not exist", call.Name))
	}
	return l.s.ExecuteTool(ctx, t, call)
}

// tool finds a tool the agent offers by name: host tools, then plugin tools.
func (s *Session) tool(name string) (plugin.Tool, bool) {
	for _, n := range s.agent.Tools {
		if n == name {
			return s.rt.tools[n], true
		}
	}
	if t, ok := s.agent.view.Tool(name); ok {
		return t.Tool, true
	}
	return nil, false
}

// ToolNames lists the tools the agent offers (host tools and plugin tools).
func (s *Session) ToolNames() []string {
	out := append([]string(nil), s.agent.Tools...)
	for _, t := range s.agent.view.Tools() {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

// PluginTool returns the tool an active plugin defines under name (p:tool),
// leaving out the agent's host tools: a sidecar's client owns every tool
// but these.
func (s *Session) PluginTool(name string) (plugin.Tool, bool) {
	t, ok := s.agent.view.Tool(name)
	if !ok {
		return nil, false
	}
	return t.Tool, true
}

// PluginToolSpecs lists the active plugins' tools.
func (s *Session) PluginToolSpecs() []model.ToolSpec {
	var out []model.ToolSpec
	for _, t := range s.agent.view.Tools() {
		out = append(out, t.Tool.Spec())
	}
	return out
}

// RunPluginTool runs, for a host that owns every other tool (the sidecar),
// the plugin tool that a call started by BeforeToolExecute names, with the
// arguments the gate settled on, and keeps its result: asked again before
// after_tool_execute (a host's retry), it returns the kept result without
// running the tool twice. ran is false for a call that names no plugin
// tool, or that is not started and waiting for its result.
func (s *Session) RunPluginTool(ctx context.Context, callID string) (res model.ToolResult, ran bool) {
	c := s.call(callID)
	if c == nil || !c.Started || c.Status != CallRunning {
		return res, false
	}
	if c.Ran != nil {
		return *c.Ran, true
	}
	t, ok := s.PluginTool(c.Call.Name)
	if !ok {
		return res, false
	}
	res = s.ExecuteTool(ctx, t, c.Call)
	c.Ran = &res
	s.callChanged(c)
	return res, true
}

// ExecuteTool runs a tool for a call that passed before_tool_execute, and
// commits what the tool wrote. A tool error or panic is an error result.
func (s *Session) ExecuteTool(ctx context.Context, t plugin.Tool, call model.ToolCall) (res model.ToolResult) {
	if s.x == nil {
		// A compacted done run (Compact) has no engine to commit with.
		return model.Error(fmt.Sprintf("tool %s: run %s is done", call.Name, s.info.ID))
	}
	in := s.input()
	in.Tool = &plugin.ToolInfo{Call: call}
	owner := pluginOfTool(s, call.Name)
	cmd := command.Command{Plugin: owner}
	func() {
		defer func() {
			if v := recover(); v != nil {
				res = model.Error(fmt.Sprintf("tool %s panicked: %v", call.Name, v))
				cmd = command.Command{Plugin: owner}
			}
		}()
		in.Phase, in.Snap, in.Configs = phase.BeforeToolExecute, s.st().Snapshot(), s.agent.Configs
		r, err := t.Execute(ctx, &in, call.Args, &cmd)
		if err != nil {
			var e *errs.Error
			msg := err.Error()
			if errors.As(err, &e) && e.Msg != "" {
				msg = e.Error()
			}
			res = model.Error(msg)
			cmd = command.Command{Plugin: owner}
			return
		}
		res = r
	}()
	if !cmd.Empty() {
		if err := s.x.Apply(ctx, phase.BeforeToolExecute, s.input(), &cmd); err != nil {
			return model.Error(fmt.Sprintf("tool %s wrote state that could not be committed: %v", call.Name, err))
		}
	}
	if res.Status == "" {
		res.Status = model.StatusSuccess
	}
	return res
}

// pluginOfTool names who a tool's writes belong to: its plugin, or "host"
// for host and extra tools (which may not write runtime keys either).
func pluginOfTool(s *Session, name string) string {
	if t, ok := s.agent.view.Tool(name); ok {
		return t.Plugin
	}
	return "host"
}
