package run

import (
	"context"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/model"
)

// ActionContinue keeps a run going when the model answered without tool
// calls: its content joins the conversation and another step runs. It is
// declared in step_end, so a hook schedules it in after_inference or
// step_end of the step it judges.
const ActionContinue = "runtime.continue"

// KeyContinue holds the continues asked for in this step ("pending") and
// how many the run has made ("count").
const KeyContinue = "__runtime.continue"

// DefaultMaxContinues bounds runtime.continue per run when the agent does
// not say.
const DefaultMaxContinues = 3

func continueSpec() plugin.ActionSpec {
	return plugin.ActionSpec{Key: ActionContinue, Phase: phase.StepEnd,
		Schema: schema.MustCompile(map[string]any{
			"type": "object", "required": []any{"content"}, "additionalProperties": false,
			"properties": map[string]any{
				"content": map[string]any{"type": "string", "minLength": 1},
				"role":    map[string]any{"type": "string", "enum": []any{model.RoleUser, model.RoleSystem}, "default": model.RoleUser},
			}}),
		Handler: plugin.ActionFunc(askContinue)}
}

// askContinue queues the request; StepEnd decides once the step is over,
// since only then is it known whether the model made tool calls.
func askContinue(_ context.Context, in *plugin.Input, payload any, out *command.Command) error {
	p := payload.(map[string]any)
	cur := lookupMap(in, KeyContinue)
	pending, _ := cur["pending"].([]any)
	next := copyMap(cur)
	next["pending"] = append(pending[:len(pending):len(pending)],
		map[string]any{"content": p["content"], "role": p["role"], "plugin": in.Scheduler})
	out.Update(KeyContinue, next)
	return nil
}

// maxContinues is the agent's bound: 0 means the default, negative none.
func (a *Agent) maxContinues() int {
	switch {
	case a.MaxContinues == 0:
		return DefaultMaxContinues
	case a.MaxContinues < 0:
		return 0
	}
	return a.MaxContinues
}

// settleContinue runs after step_end's hooks and actions. When plugins
// asked to continue and the model answered without tool calls, the run
// goes on: their contents join the conversation and are returned. Past
// the agent's bound the run ends natural and a continue_limit event says
// so. A continue asked in a step with tool calls is dropped: the run goes
// on anyway. One asked at the agent's last step is dropped and the run
// ends stopped:max_steps, since the step it asks for cannot run.
func (s *Session) settleContinue(ctx context.Context) ([]model.Message, error) {
	v, _ := s.st().Snapshot().Lookup(KeyContinue)
	cur, _ := v.(map[string]any)
	pending, _ := cur["pending"].([]any)
	if len(pending) == 0 {
		return nil, nil
	}
	count, _ := cur["count"].(float64)
	var added []model.Message
	switch {
	case !s.natural || s.termination != "":
	case int(count) >= s.agent.maxContinues():
		first, _ := pending[0].(map[string]any)
		plugin, _ := first["plugin"].(string)
		s.events.Emit(event.ContinueLimit{Step: s.info.Step, Plugin: plugin, Max: s.agent.maxContinues()})
	case s.info.Step >= s.agent.MaxSteps:
		// No step is left to run it: the run ends stopped:max_steps, and
		// content that joined the conversation would be a message the
		// model never answers, kept by the thread.
		s.natural = false
	default:
		count++
		for _, raw := range pending {
			p, _ := raw.(map[string]any)
			m := model.Message{}
			m.Role, _ = p["role"].(string)
			m.Content, _ = p["content"].(string)
			plugin, _ := p["plugin"].(string)
			added = append(added, m)
			s.events.Emit(event.RunContinued{Step: s.info.Step, Plugin: plugin, Content: m.Content, Role: m.Role})
		}
	}
	if err := s.record(ctx, phase.StepEnd, KeyContinue, map[string]any{"count": count}); err != nil {
		return nil, err
	}
	if added != nil {
		s.messages = append(s.messages, added...)
		s.natural = false
	}
	return added, nil
}
