package run

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
)

// BeforeInference runs before_inference and returns the request the model
// must receive: context messages placed, tools filtered, the inference
// override applied, then the request transforms in registration order.
// The outcome's Context lists the context messages it placed.
// req.Messages, when not empty, replaces the session's conversation (a host
// that keeps the conversation sends it each time).
func (s *Session) BeforeInference(ctx context.Context, req model.Request) (out model.Request, o Outcome, err error) {
	s.stamp()
	if s.rt.journal != nil {
		in := journal.Input{Tools: req.Tools, Params: &req.Params}
		if len(req.Tools) > 0 && len(req.Tools) == len(s.hostTools) && &req.Tools[0] == &s.hostTools[0] {
			in.Tools, in.HostTools = nil, true // run_start's record has them
		}
		if len(req.Messages) > 0 && (len(req.Messages) != len(s.messages) || &req.Messages[0] != &s.messages[0]) {
			in.Messages = req.Messages // not the session's own conversation: the host replaced it
		}
		var placed []journal.Context
		defer func() {
			s.journalPhase(journal.BeforeInference, err, func(sl *journal.Slot) {
				sl.In.Tools, sl.In.HostTools, sl.In.Messages, sl.In.Params = in.Tools, in.HostTools, in.Messages, in.Params
				sl.Rec.Context = placed
				if err == nil {
					sl.Rec.Request = &journal.Request{Tools: toolNames(out.Tools), Params: out.Params}
				}
			})
		}()
		s.placed = &placed
		defer func() { s.placed = nil }()
	}
	if err := s.expect(phase.BeforeInference, StageStepStarted); err != nil {
		return req, s.outcome(), err
	}
	if err := checkRequest(req); err != nil {
		return req, s.outcome(), err
	}
	if len(req.Messages) > 0 {
		s.messages = cloneMessages(req.Messages)
		s.messagesReplaced()
	}
	s.tools = req.Tools
	if err := s.phase(ctx, phase.BeforeInference, plugin.Input{}); err != nil {
		return req, s.outcome(), err
	}
	snap := s.st().Snapshot()
	out = model.Request{Params: s.agent.Params.under(req.Params)}
	cms := readContextMessages(snap)
	if s.placed != nil {
		*s.placed = journalContext(cms)
	}
	out.Messages = placeContextMessages(cloneMessages(s.messages), cms)
	if len(cms) > 0 {
		ev := event.ContextMessages{Step: s.info.Step}
		for _, c := range cms {
			ev.Messages = append(ev.Messages, event.ContextMessage{Key: c.key, Target: c.target, Kind: c.kind, Role: c.role, Content: c.content})
		}
		s.events.Emit(ev)
	}
	filter, _ := snap.Lookup(KeyToolFilter)
	out.Tools = filterTools(req.Tools, filter)
	override, _ := snap.Lookup(KeyInferenceOverride)
	applyOverride(&out.Params, override)

	// Ephemeral and throttled messages are used once; the filter and the
	// override hold for this step only.
	cmd := command.Command{Plugin: "runtime"}
	keep := map[string]any{}
	used := false
	for _, c := range cms {
		if c.kind == "persistent" {
			v, _ := snap.Lookup(KeyContextMessages)
			keep[c.key] = v.(map[string]any)[c.key]
		} else {
			used = true
		}
	}
	if used {
		cmd.Update(KeyContextMessages, keep)
	}
	if filter != nil {
		cmd.Update(KeyToolFilter, nil)
	}
	if override != nil {
		cmd.Update(KeyInferenceOverride, nil)
	}
	if !cmd.Empty() {
		if err := s.x.Apply(ctx, phase.BeforeInference, s.input(), &cmd); err != nil {
			return req, s.outcome(), s.fail(ctx, err)
		}
	}
	in := s.input()
	in.Phase, in.Snap, in.Configs = phase.BeforeInference, s.st().Snapshot(), s.agent.Configs
	for _, t := range s.agent.view.Transforms() {
		start := time.Now()
		next, err := callTransform(ctx, t, &in, out)
		s.rt.eng.Observe(t.Plugin, phase.BeforeInference, "transform", start, err)
		if err != nil {
			return req, s.outcome(), s.fail(ctx, err)
		}
		out = next
	}
	s.offered = s.rt.offers.names(out.Tools)
	s.tools = out.Tools
	s.stage = StageInferenceReady
	s.checkStop()
	o = s.outcome()
	for _, c := range cms {
		o.Context = append(o.Context, model.Message{Role: c.role, Content: c.content})
	}
	return out, o, nil
}

func callTransform(ctx context.Context, t plugin.TransformEntry, in *plugin.Input, req model.Request) (out model.Request, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
		if err != nil {
			err = engine.HookError(err, t.Plugin, phase.BeforeInference, t.Pos)
		}
	}()
	return t.Transform.TransformRequest(ctx, in, req)
}

func filterTools(tools []model.ToolSpec, filter any) []model.ToolSpec {
	f, _ := filter.(map[string]any)
	if f == nil {
		// Shared, not copied: the host's list (often one list for every
		// run) is never changed in place, and the clip keeps an append
		// from writing into it.
		return slices.Clip(tools)
	}
	in := func(list any, name string) bool {
		l, _ := list.([]any)
		for _, x := range l {
			if x == name {
				return true
			}
		}
		return false
	}
	only, restricted := f["include_only"]
	out := make([]model.ToolSpec, 0, len(tools))
	for _, t := range tools {
		if restricted && !in(only, t.Name) {
			continue
		}
		if in(f["exclude"], t.Name) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func applyOverride(p *model.Params, override any) {
	o, _ := override.(map[string]any)
	if o == nil {
		return
	}
	if v, ok := o["model"].(string); ok {
		p.Model = v
	}
	if v, ok := o["temperature"].(float64); ok {
		p.Temperature = &v
	}
	if v, ok := o["max_tokens"].(float64); ok {
		n := int(v)
		p.MaxTokens = &n
	}
	if v, ok := o["top_p"].(float64); ok {
		p.TopP = &v
	}
	if v, ok := o["reasoning_effort"].(string); ok {
		p.ReasoningEffort = v
	}
}

// AfterInference records the model's answer and runs after_inference. Tool
// calls without an id get "call_<step>_<index>" (index from 1). An answer
// without tool calls ends the run "natural" after step_end.
func (s *Session) AfterInference(ctx context.Context, resp model.Response) (o Outcome, err error) {
	s.stamp()
	if s.rt.journal != nil {
		orig := resp
		defer func() { s.journalPhase(journal.AfterInference, err, func(sl *journal.Slot) { sl.SetResponse(orig) }) }()
	}
	if err := s.expect(phase.AfterInference, StageInferenceReady); err != nil {
		return s.outcome(), err
	}
	if err := checkUsage(resp.Usage); err != nil {
		return s.outcome(), err
	}
	if s.handOff {
		// The list is still copied: ids are filled in below, and the
		// journal keeps the response as the host sent it.
		resp.ToolCalls = slices.Clone(resp.ToolCalls)
	} else {
		resp.ToolCalls = cloneCalls(resp.ToolCalls)
	}
	seen := make(map[string]int, len(resp.ToolCalls))
	for i := range resp.ToolCalls {
		c := &resp.ToolCalls[i]
		path := "$.response.tool_calls[" + strconv.Itoa(i) + "]"
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(s.info.Step) + "_" + strconv.Itoa(i+1)
		}
		if j, dup := seen[c.ID]; dup {
			return s.outcome(), errs.Field(path+".id", "tool_calls[%d] and tool_calls[%d] have the same id %q; give each call its own id", j, i, c.ID)
		}
		seen[c.ID] = i
		if err := checkCall(path, c); err != nil {
			return s.outcome(), err
		}
	}
	s.stage = StageInferred
	calls := make([]*CallRecord, len(resp.ToolCalls))
	for i, c := range resp.ToolCalls {
		calls[i] = &CallRecord{Call: c, Status: CallNew}
	}
	s.setCalls(calls)
	// resp.ToolCalls is this session's own (a copy, or handed off): the
	// message shares it (and its argument maps, never changed in place)
	// with the call records.
	s.messages = append(s.messages, model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
	if event.Wants(s.events, event.InferenceComplete{}.Type()) { // no copy for nobody
		s.events.Emit(event.InferenceComplete{Text: resp.Text, ToolCalls: cloneCalls(resp.ToolCalls), Usage: resp.Usage})
	}
	r := resp
	if err := s.phase(ctx, phase.AfterInference, plugin.Input{Response: &r}); err != nil {
		return s.outcome(), err
	}
	if err := s.recordCalls(ctx, phase.AfterInference); err != nil {
		return s.outcome(), err
	}
	s.natural = len(resp.ToolCalls) == 0
	s.checkStop()
	return s.outcome(), nil
}

// offerCache keeps the names of the last tool list a step offered, shared
// read-only by the sessions that offer the same list: a host offers one
// list (Claude Code's built-in tools) step after step, run after run.
type offerCache struct{ last atomic.Pointer[offeredNames] }

type offeredNames struct {
	tools *model.ToolSpec // the list's first element: the list's identity
	names []string
}

// names returns the names of tools, in order, never nil; the caller must
// not change them.
func (c *offerCache) names(tools []model.ToolSpec) []string {
	if len(tools) == 0 {
		return []string{}
	}
	if o := c.last.Load(); o != nil && o.tools == &tools[0] && len(o.names) == len(tools) {
		same := true
		for i := range tools {
			if tools[i].Name != o.names[i] { // the same strings: a pointer compare
				same = false
				break
			}
		}
		if same {
			return o.names
		}
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	c.last.Store(&offeredNames{tools: &tools[0], names: names})
	return names
}
