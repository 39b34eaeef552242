// Package run is the agent run (docs/design.md): a host-driven
// Session with one method per phase, and the autonomous loop that drives a
// Session with a model and tools. The sidecar is another thin driver of the
// same Session; no phase has a second implementation.
package run

import (
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
)

// DefaultMaxSteps bounds a run's steps when the agent does not say.
const DefaultMaxSteps = 16

// Agent configures one agent.
type Agent struct {
	ID           string
	SystemPrompt string
	// Plugins is the activation filter: empty activates every plugin.
	Plugins []string
	// Tools names the host tools (Runtime's WithTools) offered to the model.
	Tools    []string
	MaxSteps int
	// MaxContinues bounds runtime.continue per run: 0 means
	// DefaultMaxContinues, negative none.
	MaxContinues int
	// Configs maps plugin ids to their validated config for this agent.
	Configs map[string]any
	// Model overrides the runtime's model for this agent (optional).
	Params ModelParams
}

// ModelParams are default inference parameters of an agent: they fill
// what a request leaves unset (plugins' inference overrides apply after).
type ModelParams struct {
	Model       string
	Temperature *float64
	MaxTokens   *int
}

// under returns p with the agent's defaults where p leaves a field unset.
func (d ModelParams) under(p model.Params) model.Params {
	if p.Model == "" {
		p.Model = d.Model
	}
	if p.Temperature == nil {
		p.Temperature = d.Temperature
	}
	if p.MaxTokens == nil {
		p.MaxTokens = d.MaxTokens
	}
	return p
}

// Runtime runs agents for one plugin generation. It is immutable and safe
// for concurrent use; each run pins the Runtime it started on.
type Runtime struct {
	eng        *engine.Engine
	set        *plugin.Set
	agents     map[string]*agentRT
	tools      map[string]plugin.Tool
	store      Store
	generation string
	log        *slog.Logger
	clock      func() time.Time
	newID      func(prefix string) string
	toolCalls  *state.Key // __runtime.tool_calls
	// ticketTimeout applies to suspended calls whose ticket sets none.
	ticketTimeout time.Duration
	// maxHistory bounds the messages a thread keeps (0: all), and
	// maxHistorySize their bytes (0: any).
	maxHistory, maxHistorySize int
	// journal records the runs (nil: off); hash names the generation.
	journal Recorder
	hash    string
	// bundle is the published bundle the plugins came from ("": none).
	bundle string
	// noAudit: the runs' runtime.audit records are dropped (WithoutAudit).
	noAudit bool
	// configHash names the configuration (WithConfigHash).
	configHash string
	// offers keeps the names of the last tool list offered (offerNames).
	offers *offerCache
}

type agentRT struct {
	Agent
	view *plugin.View
}

// Option configures a Runtime.
type Option func(*Runtime) error

// WithAgents declares the agents; without it there is one agent "default"
// with every plugin active.
func WithAgents(agents ...Agent) Option {
	return func(r *Runtime) error {
		for _, a := range agents {
			if err := r.addAgent(a); err != nil {
				return err
			}
		}
		return nil
	}
}

// WithTools adds host tools (for example the built-in fs_read) that agents
// can name in Agent.Tools.
func WithTools(tools ...plugin.Tool) Option {
	return func(r *Runtime) error {
		for _, t := range tools {
			name := t.Spec().Name
			if _, dup := r.tools[name]; dup {
				return errs.New(errs.ToolAlreadyRegistered, "host tool %q is given twice", name)
			}
			r.tools[name] = t
		}
		return nil
	}
}

// WithStore sets where threads and runs are kept (default: in memory).
func WithStore(s Store) Option { return func(r *Runtime) error { r.store = s; return nil } }

// WithTicketTimeout sets how long a suspended call waits for a decision
// when its ticket does not say (0: forever); then the runtime cancels it.
func WithTicketTimeout(d time.Duration) Option {
	return func(r *Runtime) error { r.ticketTimeout = d; return nil }
}

// WithMaxHistory bounds the conversation a thread keeps to its last n
// messages (0: all), so a session that runs for days costs the same per
// run as a new one; thread state is kept whole.
func WithMaxHistory(n int) Option {
	return func(r *Runtime) error { r.maxHistory = n; return nil }
}

// WithMaxHistorySize bounds the conversation a thread keeps to its last
// messages that fit in n bytes, as JSON (0: any): one message is kept
// whatever its size, so a thread always has its last.
func WithMaxHistorySize(n int) Option {
	return func(r *Runtime) error { r.maxHistorySize = n; return nil }
}

// WithGeneration names the plugin generation runs report.
func WithGeneration(id string) Option {
	return func(r *Runtime) error { r.generation = id; return nil }
}

// WithConfigHash names the configuration the runtime was built from (its
// hash), which a journal's run header records (config_hash).
func WithConfigHash(hash string) Option {
	return func(r *Runtime) error { r.configHash = hash; return nil }
}

// WithoutAudit drops the runs' runtime.audit records: replay and shadow
// runtimes (Derive) share the engine, and with it the enforced host's
// audit sink, but decide nothing that is enforced.
func WithoutAudit() Option {
	return func(r *Runtime) error { r.noAudit = true; return nil }
}

// WithBundle names the published plugin bundle the runtime's plugins were
// loaded from; checkpoints keep it, so another replica restores a run on
// the plugins it started with.
func WithBundle(hash string) Option { return func(r *Runtime) error { r.bundle = hash; return nil } }

// Bundle is the published plugin bundle the plugins came from ("": none).
func (r *Runtime) Bundle() string { return r.bundle }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(r *Runtime) error { r.log = l; return nil } }

// WithIDs sets how run ids are made (tests use a counter for stable output).
func WithIDs(f func(prefix string) string) Option {
	return func(r *Runtime) error { r.newID = f; return nil }
}

// NewSet builds a plugin set with the runtime's built-ins ("runtime": the
// engine's keys and effects plus the built-in actions) added.
func NewSet(plugins ...plugin.Plugin) (*plugin.Set, error) {
	return plugin.NewSet(append([]plugin.Plugin{Builtins()}, plugins...)...)
}

// New makes a runtime over an engine whose set has the runtime's built-ins:
// one built with NewSet, or a luabridge Generation's Set. A nil engine, an
// engine without a set, or a set without the built-ins is config_invalid.
func New(eng *engine.Engine, opts ...Option) (*Runtime, error) {
	if eng == nil || eng.Set() == nil {
		return nil, errs.New(errs.ConfigInvalid, "run: New needs an engine over a plugin set (engine.New(set), the set from run.NewSet or a luabridge generation)")
	}
	r := &Runtime{eng: eng, set: eng.Set(), agents: map[string]*agentRT{}, tools: map[string]plugin.Tool{},
		log: eng.Logger(), clock: eng.Now, generation: "g0", offers: &offerCache{}}
	r.newID = newRandomID
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	if r.store == nil {
		r.store = NewMemoryStore()
	}
	var ok bool
	if r.toolCalls, ok = r.set.Registry().Key(KeyToolCalls); !ok {
		return nil, errs.New(errs.ConfigInvalid, "run: the plugin set lacks the runtime built-ins; build it with run.NewSet")
	}
	if len(r.agents) == 0 {
		if err := r.addAgent(Agent{ID: "default"}); err != nil {
			return nil, err
		}
	}
	for _, a := range r.agents {
		for _, name := range a.Tools {
			if _, ok := r.tools[name]; !ok {
				return nil, errs.New(errs.ConfigInvalid, "agent %q offers tool %q, which is not enabled; enable one of: %s",
					a.ID, name, strings.Join(r.hostToolNames(), ", "))
			}
			if _, clash := a.view.Tool(name); clash {
				return nil, errs.New(errs.ToolAlreadyRegistered, "agent %q: host tool %q clashes with a plugin tool of the same name", a.ID, name)
			}
		}
	}
	return r, nil
}

func (r *Runtime) hostToolNames() []string {
	var out []string
	for n := range r.tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (r *Runtime) addAgent(a Agent) error {
	if a.ID == "" {
		return errs.New(errs.ConfigInvalid, "an agent needs an id")
	}
	if _, dup := r.agents[a.ID]; dup {
		return errs.New(errs.ConfigInvalid, "agent %q is declared twice", a.ID)
	}
	if a.MaxSteps <= 0 {
		a.MaxSteps = DefaultMaxSteps
	}
	view, err := r.set.Activate(a.Plugins)
	if err != nil {
		return fmt.Errorf("agent %q: %w", a.ID, err)
	}
	r.agents[a.ID] = &agentRT{Agent: a, view: view}
	return nil
}

// Engine returns the phase engine.
func (r *Runtime) Engine() *engine.Engine { return r.eng }

// Set returns the plugin set.
func (r *Runtime) Set() *plugin.Set { return r.set }

// Store returns the thread and run store.
func (r *Runtime) Store() Store { return r.store }

// Generation names the plugin generation.
func (r *Runtime) Generation() string { return r.generation }

// Agent returns an agent's configuration.
func (r *Runtime) Agent(id string) (Agent, bool) {
	a, ok := r.agents[id]
	if !ok {
		return Agent{}, false
	}
	return a.Agent, true
}

// AgentID is the id of the agent a run started with agent id runs as
// ("" names the default agent), or "" when there is none.
func (r *Runtime) AgentID(id string) string {
	a, err := r.agent(id)
	if err != nil {
		return ""
	}
	return a.ID
}

// PluginOrder lists the plugins active for an agent (built-ins aside) in
// the order their hooks run, or nil for an unknown agent.
func (r *Runtime) PluginOrder(agent string) []string {
	a, ok := r.agents[agent]
	if !ok {
		return nil
	}
	return a.view.Order()
}

// AgentIDs lists the agents, sorted.
func (r *Runtime) AgentIDs() []string {
	var out []string
	for id := range r.agents {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func (r *Runtime) agent(id string) (*agentRT, error) {
	// The common cases without listing the agents (every run start).
	if a, ok := r.agents[id]; ok {
		return a, nil
	}
	if a, ok := r.agents["default"]; ok && id == "" {
		return a, nil
	}
	id, err := AgentID(id, r.AgentIDs())
	if err != nil {
		return nil, err
	}
	return r.agents[id], nil
}

// AgentID is the agent a run asked for id runs as, among the agents ids:
// id itself, or for "" the agent "default", else the only agent. Another
// id is config_invalid. Hosts call it to refuse a run before they start
// anything.
func AgentID(id string, ids []string) (string, error) {
	if id == "" {
		id = "default"
		if !slices.Contains(ids, id) && len(ids) == 1 {
			id = ids[0]
		}
	}
	if !slices.Contains(ids, id) {
		return "", errs.New(errs.ConfigInvalid, "unknown agent %q%s; agents: %s", errs.Clip(id, 200), errs.DidYouMean(id, ids),
			strings.Join(ids, ", "))
	}
	return id, nil
}
