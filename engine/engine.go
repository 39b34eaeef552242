// Package engine is the phase engine of awaken-lua (docs/design.md, "The
// phase engine"): it runs the hooks of a phase against one frozen snapshot,
// merges their commands in plugin order with the exclusive-key fallback,
// runs scheduled actions to convergence, and dispatches effects after the
// commits that emitted them. It knows nothing of Lua.
//
//	set, _ := engine.NewSet(myPlugins...)
//	eng := engine.New(set, engine.WithMaxRounds(16))
//	x, _ := eng.Exec(engine.ExecConfig{Store: store, View: set.All()})
//	err := x.Phase(ctx, phase.StepStart, plugin.Input{Run: info})
package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// DefaultMaxRounds bounds the convergence loop of one phase.
const DefaultMaxRounds = 16

// Keys owned by the engine. Plugins may read them.
const (
	KeyPendingActions = "__runtime.pending_actions"
	KeyFailedActions  = "__runtime.failed_actions"
	KeyStop           = "__runtime.stop"
)

// Built-in effects.
const (
	EffectLog   = "runtime.log"
	EffectAudit = "runtime.audit"
)

// Engine runs phases for the plugins of one Set. It is safe for concurrent
// use; per-run state lives in an Exec.
type Engine struct {
	set       *plugin.Set
	maxRounds int
	limits    state.Limits
	log       *slog.Logger
	audit     plugin.AuditSink
	clock     func() time.Time
	observe   HookObserver
	// cost is the observed time per hook call of each phase (ns), which
	// decides whether a phase's hooks run in parallel.
	cost [phase.Count + 1]atomic.Int64

	effectFailures atomic.Int64
	// txns are finished phases' transactions for the next phase of any
	// run (a run goes through a dozen phases and runtime commits per tool
	// call); a pool, so that an idle run holds none.
	txns sync.Pool
}

// HookObserver sees how long each plugin call took: kind is "hook",
// "gate", "action", "effect", "transform" or "result_transform". It must
// be cheap and safe for concurrent use (the sidecar's metrics, profiling).
type HookObserver func(plugin string, p phase.Phase, kind string, d time.Duration, err error)

// WithHookObserver sets a HookObserver.
func WithHookObserver(o HookObserver) Option { return func(e *Engine) { e.observe = o } }

// Observe reports a plugin call made outside the engine (the run's
// transforms) to the observer, if any.
func (e *Engine) Observe(plugin string, p phase.Phase, kind string, start time.Time, err error) {
	if e.observe != nil {
		e.observe(plugin, p, kind, time.Since(start), err)
	}
}

// Option configures an Engine.
type Option func(*Engine)

// WithMaxRounds sets the convergence loop's round limit (default 16).
func WithMaxRounds(n int) Option {
	return func(e *Engine) {
		if n > 0 {
			e.maxRounds = n
		}
	}
}

// WithStateLimits bounds each run's state ([runtime] max_value_size and
// max_state_size; zero fields keep the defaults). Runs open their stores
// with StateLimits.
func WithStateLimits(l state.Limits) Option { return func(e *Engine) { e.limits = l } }

// WithLogger sets the logger for runtime.log, conflicts and failures.
func WithLogger(l *slog.Logger) Option { return func(e *Engine) { e.log = l } }

// WithAudit sets the sink of runtime.audit records.
func WithAudit(a plugin.AuditSink) Option { return func(e *Engine) { e.audit = a } }

// WithClock sets the clock hooks read through Input.Now, so runs replay
// deterministically.
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.clock = now } }

// New makes an engine for a set built with NewSet, or one whose first
// plugin is Core or CoreWith.
func New(set *plugin.Set, opts ...Option) *Engine {
	e := &Engine{set: set, maxRounds: DefaultMaxRounds, clock: time.Now,
		log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Set returns the engine's plugin set.
func (e *Engine) Set() *plugin.Set { return e.set }

// MaxRounds returns the convergence loop's round limit.
func (e *Engine) MaxRounds() int { return e.maxRounds }

// StateLimits returns the limits of a run's state, defaults filled in:
// open a run's store with state.Open(reg, seed, rev, eng.StateLimits()).
func (e *Engine) StateLimits() state.Limits { return e.limits.WithDefaults() }

// Logger returns the engine's logger.
func (e *Engine) Logger() *slog.Logger { return e.log }

// Now reads the engine's clock.
func (e *Engine) Now() time.Time { return e.clock() }

// EffectFailures counts failed effect handlers since the engine was made.
func (e *Engine) EffectFailures() int64 { return e.effectFailures.Load() }

// NewSet builds a plugin set with the engine's built-ins first.
func NewSet(plugins ...plugin.Plugin) (*plugin.Set, error) {
	return plugin.NewSet(append([]plugin.Plugin{Core()}, plugins...)...)
}

// Core is the built-in plugin "runtime": the action queue, dead letters
// and stop keys, and the runtime.log and runtime.audit effects. A layer
// above the engine (the agent runtime) adds its own built-ins to this one
// plugin through CoreWith, so a set has exactly one "runtime".
func Core() plugin.Plugin { return CoreWith("awaken-lua runtime built-ins", nil) }

// CoreWith is Core extended: description describes it, and more registers
// the layer's own keys, actions and effects after the engine's.
func CoreWith(description string, more func(*plugin.Registrar) error) plugin.Plugin {
	return corePlugin{description: description, more: more}
}

type corePlugin struct {
	description string
	more        func(*plugin.Registrar) error
}

func (corePlugin) ID() string    { return "runtime" }
func (corePlugin) Builtin() bool { return true }
func (c corePlugin) Register(r *plugin.Registrar) error {
	r.Describe(c.description)
	if err := registerCore(r); err != nil {
		return err
	}
	if c.more != nil {
		return c.more(r)
	}
	return nil
}

// registerCore registers the engine's built-in keys and effects on r.
func registerCore(r *plugin.Registrar) error {
	for _, name := range []string{KeyPendingActions, KeyFailedActions, KeyStop} {
		if _, err := r.Key(state.Spec{Name: name, Scope: state.ScopeRun, Trusted: true}, errs.Pos{}); err != nil {
			return err
		}
	}
	if err := r.Effect(plugin.EffectSpec{Key: EffectLog, Handler: plugin.EffectFunc(logEffect)}); err != nil {
		return err
	}
	return r.Effect(plugin.EffectSpec{Key: EffectAudit, Handler: plugin.EffectFunc(auditEffect)})
}

// logEffect writes {level?, message, fields?} as one structured log line.
func logEffect(ctx context.Context, in *plugin.Input, payload any) error {
	if in.Log == nil {
		return nil
	}
	level, msg, attrs := slog.LevelInfo, "", []any{"run_id", in.Run.ID}
	switch p := payload.(type) {
	case string:
		msg = p
	case map[string]any:
		msg, _ = p["message"].(string)
		switch p["level"] {
		case "debug":
			level = slog.LevelDebug
		case "warn":
			level = slog.LevelWarn
		case "error":
			level = slog.LevelError
		}
		if f, ok := p["fields"].(map[string]any); ok {
			for _, k := range value.SortedKeys(f) {
				attrs = append(attrs, k, f[k])
			}
		}
	default:
		msg = value.String(payload)
	}
	in.Log.Log(ctx, level, msg, attrs...)
	return nil
}

// auditEffect appends the payload, with the run's ids, as one record.
func auditEffect(ctx context.Context, in *plugin.Input, payload any) error {
	if in.Audit == nil {
		return nil
	}
	rec := map[string]any{}
	if m, ok := payload.(map[string]any); ok {
		for k, v := range m {
			rec[k] = v
		}
	} else {
		rec["data"] = payload
	}
	for k, v := range map[string]any{"run_id": in.Run.ID, "thread_id": in.Run.ThreadID, "agent_id": in.Run.AgentID} {
		if _, set := rec[k]; !set {
			rec[k] = v
		}
	}
	if _, set := rec["time"]; !set && !in.Now.IsZero() {
		rec["time"] = in.Now.UTC().Format(time.RFC3339Nano)
	}
	if err := in.Audit.Append(ctx, rec); err != nil {
		return fmt.Errorf("audit sink: %w", err)
	}
	return nil
}

// ExecConfig is what one run executes against.
type ExecConfig struct {
	Store   *state.Store
	View    *plugin.View   // the active plugins; nil means all
	Configs map[string]any // plugin id -> config for this agent
	Events  event.Sink     // nil discards
	Log     *slog.Logger   // nil uses the engine's
	// OnEffect, when set, sees each effect as it is dispatched (the test
	// harness lists them).
	OnEffect func(key string, payload any)
	// NoAudit drops the run's runtime.audit records: a replayed run's
	// decisions were not enforced, and in the audit sink they would read
	// as if they had been.
	NoAudit bool
}

// Exec runs phases of one run. One goroutine drives it at a time.
type Exec struct {
	e       *Engine
	store   *state.Store
	view    *plugin.View
	configs map[string]any
	events  event.Sink
	log     *slog.Logger
	audit   plugin.AuditSink // nil: runtime.audit records are dropped
	onEff   func(key string, payload any)

	pending *state.Key
	failed  *state.Key
	stop    *state.Key
}

// Exec binds the engine to one run's store.
func (e *Engine) Exec(c ExecConfig) (*Exec, error) {
	reg := e.set.Registry()
	x := &Exec{e: e, store: c.Store, view: c.View, configs: c.Configs, events: c.Events, log: c.Log, onEff: c.OnEffect, audit: e.audit}
	if c.NoAudit {
		x.audit = nil
	}
	if x.view == nil {
		x.view = e.set.All()
	}
	if x.events == nil {
		x.events = event.Discard{}
	}
	if x.log == nil {
		x.log = e.log
	}
	var ok1, ok2, ok3 bool
	x.pending, ok1 = reg.Key(KeyPendingActions)
	x.failed, ok2 = reg.Key(KeyFailedActions)
	x.stop, ok3 = reg.Key(KeyStop)
	if !ok1 || !ok2 || !ok3 {
		return nil, errs.New(errs.ConfigInvalid, "engine: the plugin set lacks the runtime built-ins; build it with engine.NewSet, or put engine.Core (or CoreWith) first")
	}
	if c.Store == nil {
		return nil, errs.New(errs.ConfigInvalid, "engine: ExecConfig.Store is nil; open one with state.Open on the set's registry")
	}
	if c.Store.Snapshot().Registry() != reg {
		return nil, errs.New(errs.ConfigInvalid, "engine: the store was made for another plugin set; open one with state.Open on this set's registry")
	}
	return x, nil
}

// Store returns the run's store.
func (x *Exec) Store() *state.Store { return x.store }

// View returns the active plugins.
func (x *Exec) View() *plugin.View { return x.view }

// Engine returns the engine.
func (x *Exec) Engine() *Engine { return x.e }

// Snapshot returns the run's current snapshot.
func (x *Exec) Snapshot() *state.Snapshot { return x.store.Snapshot() }

// Stopped returns the stop a plugin requested, if any.
func (x *Exec) Stopped() (code, detail string, ok bool) {
	m, _ := x.store.Snapshot().Get(x.stop).(map[string]any)
	if m == nil {
		return "", "", false
	}
	code, _ = m["code"].(string)
	detail, _ = m["detail"].(string)
	return code, detail, true
}
