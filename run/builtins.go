package run

import (
	"context"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
)

// Keys owned by the run. Plugins may read them.
const (
	KeyRun               = "__runtime.run"
	KeyToolCalls         = "__runtime.tool_calls"
	KeyContextMessages   = "__runtime.context_messages"
	KeyThrottle          = "__runtime.throttle"
	KeyToolFilter        = "__runtime.tool_filter"
	KeyInferenceOverride = "__runtime.inference_override"
)

// Built-in actions; these run in before_inference (runtime.continue, in
// continue.go, in step_end).
const (
	ActionAddContextMessage    = "runtime.add_context_message"
	ActionRemoveContextMessage = "runtime.remove_context_message"
	ActionSetInferenceOverride = "runtime.set_inference_override"
	ActionExcludeTool          = "runtime.exclude_tool"
	ActionIncludeOnlyTools     = "runtime.include_only_tools"
)

// Context message targets and kinds.
var (
	targets = []any{"system", "session", "conversation", "suffix_system"}
	kinds   = []any{"ephemeral", "persistent", "throttled"}
)

// Builtins is the built-in plugin "runtime" with the agent runtime's own
// built-ins added to the engine's: never filtered out.
func Builtins() plugin.Plugin {
	return engine.CoreWith("awaken-lua runtime built-ins: the action queue, tool calls, context messages, tool filters, inference overrides",
		registerBuiltins)
}

// registerBuiltins registers the agent runtime's keys and actions.
func registerBuiltins(r *plugin.Registrar) error {
	for _, k := range []string{KeyRun, KeyToolCalls, KeyContextMessages, KeyThrottle, KeyToolFilter, KeyInferenceOverride, KeyContinue} {
		if _, err := r.Key(state.Spec{Name: k, Scope: state.ScopeRun, Trusted: true}, errs.Pos{}); err != nil {
			return err
		}
	}
	actions := []plugin.ActionSpec{
		{Key: ActionAddContextMessage, Schema: schema.MustCompile(map[string]any{
			"type": "object", "required": []any{"key", "content"}, "additionalProperties": false,
			"properties": map[string]any{
				"key":      map[string]any{"type": "string", "minLength": 1},
				"role":     map[string]any{"type": "string", "enum": []any{"system", "user", "assistant"}, "default": "system"},
				"content":  map[string]any{"type": "string"},
				"target":   map[string]any{"type": "string", "enum": targets, "default": "system"},
				"priority": map[string]any{"type": "number", "default": 0},
				"kind":     map[string]any{"type": "string", "enum": kinds, "default": "ephemeral"},
				"cooldown": map[string]any{"type": "integer", "minimum": 0, "default": 0},
			}}), Handler: plugin.ActionFunc(addContextMessage)},
		{Key: ActionRemoveContextMessage, Schema: schema.MustCompile(map[string]any{
			"type": "object", "additionalProperties": false,
			"properties": map[string]any{
				"key":    map[string]any{"type": "string", "minLength": 1},
				"prefix": map[string]any{"type": "string", "minLength": 1},
			}}), Handler: plugin.ActionFunc(removeContextMessage)},
		{Key: ActionSetInferenceOverride, Schema: schema.MustCompile(map[string]any{
			"type": "object", "additionalProperties": false,
			"properties": map[string]any{
				"model":            map[string]any{"type": "string"},
				"temperature":      map[string]any{"type": "number", "minimum": 0},
				"max_tokens":       map[string]any{"type": "integer", "minimum": 1},
				"top_p":            map[string]any{"type": "number", "minimum": 0, "maximum": 1},
				"reasoning_effort": map[string]any{"type": "string"},
			}}), Handler: plugin.ActionFunc(setInferenceOverride)},
		{Key: ActionExcludeTool, Schema: schema.MustCompile(map[string]any{"type": "string", "minLength": 1}),
			Handler: plugin.ActionFunc(excludeTool)},
		{Key: ActionIncludeOnlyTools, Schema: schema.MustCompile(map[string]any{"type": "array", "items": map[string]any{"type": "string"}}),
			Handler: plugin.ActionFunc(includeOnlyTools)},
	}
	for _, a := range actions {
		a.Phase = phase.BeforeInference
		if err := r.Action(a); err != nil {
			return err
		}
	}
	return r.Action(continueSpec())
}

func lookupMap(in *plugin.Input, key string) map[string]any {
	v, _ := in.Snap.Lookup(key)
	m, _ := v.(map[string]any)
	return m
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func contentHash(s string) string {
	h := fnv.New64a()
	h.Write([]byte(s))
	return strconv.FormatUint(h.Sum64(), 16)
}

// addContextMessage stores a context message under its key (the same key
// replaces). A throttled message is stored only when its cooldown, counted
// in steps, has passed since it was last placed, or its content changed.
func addContextMessage(_ context.Context, in *plugin.Input, payload any, out *command.Command) error {
	p := payload.(map[string]any)
	key := p["key"].(string)
	if p["kind"] == "throttled" {
		thr := lookupMap(in, KeyThrottle)
		hash := contentHash(p["content"].(string))
		if last, ok := thr[key].(map[string]any); ok && last["hash"] == hash {
			cooldown := p["cooldown"].(float64)
			if float64(in.Run.Step)-last["step"].(float64) < cooldown {
				return nil
			}
		}
		thr = copyMap(thr)
		thr[key] = map[string]any{"hash": hash, "step": float64(in.Run.Step)}
		out.Update(KeyThrottle, thr)
	}
	msgs := copyMap(lookupMap(in, KeyContextMessages))
	msgs[key] = p
	out.Update(KeyContextMessages, msgs)
	return nil
}

func removeContextMessage(_ context.Context, in *plugin.Input, payload any, out *command.Command) error {
	p := payload.(map[string]any)
	key, _ := p["key"].(string)
	prefix, _ := p["prefix"].(string)
	if key == "" && prefix == "" {
		return errs.New(errs.SchemaViolation, "runtime.remove_context_message needs a key or a prefix")
	}
	cur := lookupMap(in, KeyContextMessages)
	next := make(map[string]any, len(cur))
	for k, v := range cur {
		if k == key || (prefix != "" && strings.HasPrefix(k, prefix)) {
			continue
		}
		next[k] = v
	}
	if len(next) != len(cur) {
		out.Update(KeyContextMessages, next)
	}
	return nil
}

func setInferenceOverride(_ context.Context, in *plugin.Input, payload any, out *command.Command) error {
	next := copyMap(lookupMap(in, KeyInferenceOverride))
	for k, v := range payload.(map[string]any) {
		next[k] = v
	}
	out.Update(KeyInferenceOverride, next)
	return nil
}

func addToFilter(in *plugin.Input, out *command.Command, field string, ids []any) {
	f := copyMap(lookupMap(in, KeyToolFilter))
	list, _ := f[field].([]any)
	list = append([]any(nil), list...)
	if list == nil {
		list = []any{}
	}
outer:
	for _, id := range ids {
		for _, have := range list {
			if have == id {
				continue outer
			}
		}
		list = append(list, id)
	}
	f[field] = list
	out.Update(KeyToolFilter, f)
}

func excludeTool(_ context.Context, in *plugin.Input, payload any, out *command.Command) error {
	addToFilter(in, out, "exclude", []any{payload})
	return nil
}

func includeOnlyTools(_ context.Context, in *plugin.Input, payload any, out *command.Command) error {
	ids, _ := payload.([]any)
	addToFilter(in, out, "include_only", ids)
	return nil
}

// contextMessage is a stored context message.
type contextMessage struct {
	key, role, content, target, kind string
	priority                         float64
}

func readContextMessages(snap *state.Snapshot) []contextMessage {
	v, _ := snap.Lookup(KeyContextMessages)
	m, _ := v.(map[string]any)
	out := make([]contextMessage, 0, len(m))
	for k, raw := range m {
		p, _ := raw.(map[string]any)
		cm := contextMessage{key: k}
		cm.role, _ = p["role"].(string)
		cm.content, _ = p["content"].(string)
		cm.target, _ = p["target"].(string)
		cm.kind, _ = p["kind"].(string)
		cm.priority, _ = p["priority"].(float64)
		if cm.role == "" {
			cm.role = model.RoleSystem
		}
		out = append(out, cm)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].priority != out[j].priority {
			return out[i].priority < out[j].priority
		}
		return out[i].key < out[j].key
	})
	return out
}

// placeContextMessages returns msgs with the context messages placed: system
// messages right after the system prompt, session then conversation messages
// after the leading system messages, suffix_system messages last; each target
// sorted by (priority, key).
func placeContextMessages(msgs []model.Message, cms []contextMessage) []model.Message {
	if len(cms) == 0 {
		return msgs
	}
	by := map[string][]model.Message{}
	for _, c := range cms {
		by[c.target] = append(by[c.target], model.Message{Role: c.role, Content: c.content})
	}
	out := make([]model.Message, 0, len(msgs)+len(cms))
	i := 0
	if len(msgs) > 0 && msgs[0].Role == model.RoleSystem {
		out = append(out, msgs[0])
		i = 1
	}
	out = append(out, by["system"]...)
	for i < len(msgs) && msgs[i].Role == model.RoleSystem {
		out = append(out, msgs[i])
		i++
	}
	out = append(out, by["session"]...)
	out = append(out, by["conversation"]...)
	out = append(out, msgs[i:]...)
	return append(out, by["suffix_system"]...)
}
