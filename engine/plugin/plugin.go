// Package plugin defines plugins and what they register: the
// structural parts (keys, action handlers, effect handlers) that are always
// present, and the behavioural parts (phase hooks, gate hooks, tools, request
// and result transforms) that are present only while the plugin is active.
// Go built-ins and Lua plugins implement the same interfaces.
package plugin

import (
	"context"
	"log/slog"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
)

// Plugin is a unit of registration.
type Plugin interface {
	ID() string
	Register(r *Registrar) error
}

// Builtin is implemented by runtime built-ins, which an activation filter
// never drops.
type Builtin interface {
	Builtin() bool
}

// RunInfo identifies the run a hook is called for.
type RunInfo struct {
	ID       string `json:"id"`
	ThreadID string `json:"thread_id"`
	AgentID  string `json:"agent_id"`
	Step     int    `json:"step"`
	// Termination is set once the run is ending (in run_end, say).
	Termination string `json:"termination,omitempty"`
	// Cwd is the working directory the agent reported on the event that
	// drives the run ("" when none did: a run of the sidecar's API or of
	// awaken-lua run).
	Cwd string `json:"cwd,omitempty"`
}

// ToolInfo is the tool call a per-call phase is about.
type ToolInfo struct {
	Call   model.ToolCall
	Result *model.ToolResult // after_tool_execute
	Resume *gate.Resume      // set when a suspended call is resumed
	Gate   *GateInfo         // the gate's decision, after tool_gate
}

// GateInfo is what the gate decided about a call.
type GateInfo struct {
	Decision    gate.Kind // Allow (a rewrite too), Block, Suspend or SetResult
	Plugin      string    // who decided ("" when no plugin did)
	Reason      string
	RewrittenBy string
}

// AuditSink receives runtime.audit records, one JSON object each.
type AuditSink interface {
	Append(ctx context.Context, record map[string]any) error
}

// Input is everything a hook, handler, tool or transform may read. The
// engine fills it; callees must not modify it or the values it reaches.
type Input struct {
	Phase    phase.Phase
	Run      RunInfo
	Snap     *state.Snapshot
	Now      time.Time
	Messages []model.Message
	Tool     *ToolInfo       // per-call phases
	Response *model.Response // after_inference
	// Tools are the tools of the step: in before_inference the candidates,
	// afterwards the ones offered to the model.
	Tools   []model.ToolSpec
	Configs map[string]any // plugin id -> config for the running agent
	Log     *slog.Logger
	Audit   AuditSink
	// Scheduler is, for an action handler, the plugin that scheduled the
	// action ("" elsewhere).
	Scheduler string
}

// Config returns the config of the plugin with the given id.
func (in *Input) Config(plugin string) any {
	if in == nil {
		return nil
	}
	return in.Configs[plugin]
}

// Hook runs at a phase and records its writes into out.
type Hook interface {
	Run(ctx context.Context, in *Input, out *command.Command) error
}

// HookFunc adapts a function to Hook.
type HookFunc func(ctx context.Context, in *Input, out *command.Command) error

// Run calls f.
func (f HookFunc) Run(ctx context.Context, in *Input, out *command.Command) error {
	return f(ctx, in, out)
}

// GateHook decides about one tool call (in.Tool). It is pure: it may be
// called more than once for the same call and writes nothing.
type GateHook interface {
	Gate(ctx context.Context, in *Input) (gate.Decision, error)
}

// GateFunc adapts a function to GateHook.
type GateFunc func(ctx context.Context, in *Input) (gate.Decision, error)

// Gate calls f.
func (f GateFunc) Gate(ctx context.Context, in *Input) (gate.Decision, error) { return f(ctx, in) }

// ActionHandler handles a scheduled action's payload.
type ActionHandler interface {
	Handle(ctx context.Context, in *Input, payload any, out *command.Command) error
}

// ActionFunc adapts a function to ActionHandler.
type ActionFunc func(ctx context.Context, in *Input, payload any, out *command.Command) error

// Handle calls f.
func (f ActionFunc) Handle(ctx context.Context, in *Input, payload any, out *command.Command) error {
	return f(ctx, in, payload, out)
}

// EffectHandler handles an effect after the commit that emitted it; in.Snap
// is the post-commit state. It cannot write.
type EffectHandler interface {
	Handle(ctx context.Context, in *Input, payload any) error
}

// EffectFunc adapts a function to EffectHandler.
type EffectFunc func(ctx context.Context, in *Input, payload any) error

// Handle calls f.
func (f EffectFunc) Handle(ctx context.Context, in *Input, payload any) error {
	return f(ctx, in, payload)
}

// Tool is a capability offered to the model. Execute may record writes
// (state updates, actions, effects) into out; they are committed with the
// tool's completion.
type Tool interface {
	Spec() model.ToolSpec
	Execute(ctx context.Context, in *Input, args map[string]any, out *command.Command) (model.ToolResult, error)
}

// RequestTransform rewrites an inference request before the model sees it.
type RequestTransform interface {
	TransformRequest(ctx context.Context, in *Input, req model.Request) (model.Request, error)
}

// RequestTransformFunc adapts a function to RequestTransform.
type RequestTransformFunc func(ctx context.Context, in *Input, req model.Request) (model.Request, error)

// TransformRequest calls f.
func (f RequestTransformFunc) TransformRequest(ctx context.Context, in *Input, req model.Request) (model.Request, error) {
	return f(ctx, in, req)
}

// ResultTransform rewrites a tool result before the model sees it.
type ResultTransform interface {
	TransformResult(ctx context.Context, in *Input, call model.ToolCall, res model.ToolResult) (model.ToolResult, error)
}

// ResultTransformFunc adapts a function to ResultTransform.
type ResultTransformFunc func(ctx context.Context, in *Input, call model.ToolCall, res model.ToolResult) (model.ToolResult, error)

// TransformResult calls f.
func (f ResultTransformFunc) TransformResult(ctx context.Context, in *Input, call model.ToolCall, res model.ToolResult) (model.ToolResult, error) {
	return f(ctx, in, call, res)
}

// ActionSpec declares an action and its handler.
type ActionSpec struct {
	Key     string
	Phase   phase.Phase
	Schema  *schema.Schema // of the payload; nil accepts any
	Handler ActionHandler
	Pos     errs.Pos
}

// EffectSpec declares an effect handler.
type EffectSpec struct {
	Key     string
	Handler EffectHandler
	Pos     errs.Pos
}

// Info describes a registered plugin.
type Info struct {
	ID          string
	Description string
	Config      *schema.Schema // nil: the plugin takes no config
	Pos         errs.Pos
	Builtin     bool
	// Priority orders plugins (MinPriority to MaxPriority, higher first,
	// DefaultPriority unless set): their hooks in serial fallbacks, their
	// commands' merge order and gate ties. Equal priorities keep the order
	// of the agent's plugins list, then the order the plugins were given.
	Priority int
	// ValidateConfig, when set, checks a config beyond its schema (for
	// example a rule syntax) after defaults are filled.
	ValidateConfig func(cfg any) error
}

// New makes a plugin from an id and a registration function, for plugins
// written in Go.
func New(id string, register func(r *Registrar) error) Plugin {
	return funcPlugin{id: id, register: register}
}

type funcPlugin struct {
	id       string
	register func(r *Registrar) error
}

func (p funcPlugin) ID() string                  { return p.id }
func (p funcPlugin) Register(r *Registrar) error { return p.register(r) }
