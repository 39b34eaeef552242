// Package host owns what a running awaken-lua process holds: the
// configuration, the current plugin generation, the thread store, the audit
// sink, and hot reload (docs/design.md, "Generations and hot reload"). The CLI and the sidecar are drivers over
// it; an embedding program can use it too.
//
// A generation is built aside and swapped in only when it loads (build,
// swap, then retire the old one, as Caddy does); each run pins the
// generation current at its start and releases it at its end, and an old
// generation's Lua states close when its last run ends.
package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/model/anthropic"
	"github.com/awaken-lua/awaken-lua/model/openai"
	"github.com/awaken-lua/awaken-lua/model/scripted"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/store/filestore"
)

// DefaultConfig is the configuration file used when none is named.
const DefaultConfig = "awaken.toml"

// Options configure Open.
type Options struct {
	// ConfigPath is awaken.toml; "" uses ./awaken.toml when it exists and
	// the defaults otherwise.
	ConfigPath string
	Log        *slog.Logger
	// Stdlib replaces the embedded stdlib (tests).
	Stdlib fs.FS
	// Model overrides [model]: "scripted:FILE" or "openai:MODEL".
	Model string
	// ModelRetry hears of each retry of an HTTP model (429, 5xx, a
	// transport error): which attempt failed, why, and the wait.
	ModelRetry func(attempt int, reason string, wait time.Duration)
	// Store replaces the configured store (tests).
	Store run.Store
	// Go plugins are registered in every generation, before Lua plugins.
	Go    []plugin.Plugin
	Clock func() time.Time
	// PoolSize bounds warm Lua states per plugin (0: the default).
	PoolSize int
	// HookObserver sees the duration of every plugin call (metrics).
	HookObserver engine.HookObserver
	// PluginDir, when set, replaces the configuration's plugin_dir
	// (replay's and a shadow's candidate); relative to the working directory.
	PluginDir string
	// Candidate marks a generation that is evaluated, never enforced
	// (replay's, a shadow's): it writes no journal and no audit file.
	Candidate bool
	// Tap sees every journal record of every run, journal on or off (a
	// shadow generation).
	Tap run.Recorder
	// Run marks a host opened for one autonomous run (awaken-lua run) of
	// Agent: Open refuses a model that cannot be made and an unknown agent
	// before it opens the store, the audit file or the journal, so a
	// refused run leaves no file behind.
	Run   bool
	Agent string
}

// Generation is one load of the configuration and the plugins.
type Generation struct {
	ID       string
	Hash     string
	LoadedAt time.Time
	Config   *config.Config
	Lua      *luabridge.Generation
	Runtime  *run.Runtime

	override  string
	onRetry   func(attempt int, reason string, wait time.Duration)
	pluginDir string // the plugin directory it loaded from ("" for none)
	modelMu   sync.Mutex
	model     model.Model // an openai client, shared by runs
}

// Release unpins the generation; call it once per Acquire.
func (g *Generation) Release() { g.Lua.Release() }

// Model returns the model executor a run uses: the configured one, or the
// override given to Open. A scripted model answers from its script from the
// first turn, so each run gets its own.
func (g *Generation) Model() (model.Model, error) {
	g.modelMu.Lock()
	defer g.modelMu.Unlock()
	if g.model != nil {
		return g.model, nil
	}
	m, err := newModel(g.Config, g.override, g.onRetry)
	if err != nil {
		return nil, placeModel(g.Config, g.override, err)
	}
	if _, scripted := m.(*scripted.Model); !scripted {
		g.model = m
	}
	return m, nil
}

// ResumeModel returns the model a run restored from the store continues
// with, after answered inferences in an earlier process: a scripted model
// starts past the turns that run already had, since a fresh one would
// answer the resumed run with the script's first turn again. Other models
// keep no position.
func (g *Generation) ResumeModel(answered int) (model.Model, error) {
	m, err := g.Model()
	if err != nil {
		return nil, err
	}
	if sm, ok := m.(*scripted.Model); ok {
		sm.Skip(answered)
	}
	return m, nil
}

// placeModel puts a model's configuration error (an empty key variable,
// a bad base_url) at the [model] line it comes from; a --model override's
// stays where it is, since the flag is its place.
func placeModel(c *config.Config, override string, err error) error {
	var e *errs.Error
	if override != "" || !errors.As(err, &e) || e.Code != errs.ConfigInvalid || e.Pos.IsValid() {
		return err
	}
	field := "model"
	switch {
	case strings.Contains(e.Msg, "api_key_env"), strings.Contains(e.Msg, "environment variable"):
		field = "api_key_env"
	case strings.Contains(e.Msg, "base_url"):
		field = "base_url"
	}
	placed := *e
	placed.Pos = c.Pos("model", field)
	return &placed
}

// newModel builds the executor of a config or of an override
// ("scripted:FILE", "openai:MODEL").
func newModel(c *config.Config, override string, onRetry func(int, string, time.Duration)) (model.Model, error) {
	kind, arg := c.Model.Kind, ""
	if override != "" {
		k, a, ok := strings.Cut(override, ":")
		if !ok || a == "" || (k != config.ModelScripted && k != config.ModelOpenAI && k != config.ModelAnthropic) {
			return nil, errs.New(errs.ConfigInvalid, "--model %q: use scripted:FILE, openai:MODEL or anthropic:MODEL", override)
		}
		kind, arg = k, a
	}
	switch kind {
	case config.ModelScripted:
		if arg != "" {
			return scripted.Open(arg)
		}
		return openScript(c)
	case config.ModelOpenAI:
		cfg := openai.Config{BaseURL: c.Model.BaseURL, Model: c.Model.Model, APIKeyEnv: c.Model.APIKeyEnv,
			Timeout: time.Duration(c.Model.Timeout), MaxRetries: c.Model.MaxRetries, OnRetry: onRetry}
		if cfg.MaxRetries == 0 {
			cfg.MaxRetries = -1 // awaken.toml's 0 means no retries; openai's 0 means its default
		}
		if arg != "" {
			cfg.Model = arg
			if cfg.BaseURL == "" {
				cfg.BaseURL = "https://api.openai.com/v1"
				if cfg.APIKeyEnv == "" {
					cfg.APIKeyEnv = "OPENAI_API_KEY"
				}
			}
		}
		return openai.New(cfg)
	case config.ModelAnthropic:
		cfg := anthropic.Config{BaseURL: c.Model.BaseURL, Model: c.Model.Model, APIKeyEnv: c.Model.APIKeyEnv,
			Timeout: time.Duration(c.Model.Timeout), MaxRetries: c.Model.MaxRetries, OnRetry: onRetry}
		if cfg.MaxRetries == 0 {
			cfg.MaxRetries = -1 // awaken.toml's 0 means no retries
		}
		if arg != "" {
			cfg.Model = arg
			if c.Model.Kind != config.ModelAnthropic {
				cfg.BaseURL, cfg.APIKeyEnv = "", "" // the API's own, with ANTHROPIC_API_KEY
			}
		}
		return anthropic.New(cfg)
	}
	return nil, errs.New(errs.ConfigInvalid, "model kind %q is not scripted, openai or anthropic", kind)
}

// Status is the last reload's outcome, for `dev`, /v1/plugins and /readyz.
type Status struct {
	Generation  string       `json:"generation"`
	Hash        string       `json:"hash"`
	LoadedAt    time.Time    `json:"loaded_at"`
	LastAttempt time.Time    `json:"last_attempt"`
	LastResult  string       `json:"last_result"` // "loaded", "unchanged" or "failed"
	Errors      []string     `json:"errors,omitempty"`
	Reloads     int          `json:"reloads"`
	Failures    int          `json:"failures"`
	Took        Duration     `json:"took"`
	Removed     []string     `json:"removed,omitempty"` // plugins the current generation dropped from its predecessor (files deleted), sorted
	Problems    []errs.Error `json:"-"`
}

// Duration renders as a string in JSON.
type Duration time.Duration

// MarshalText renders "12.3ms".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Host holds the current generation and what outlives generations.
type Host struct {
	opts       Options
	configPath string
	log        *slog.Logger
	store      run.Store
	audit      *auditFile
	journal    *journalSink
	seq        atomic.Int64

	// reloading holds a token while a build runs: one build at a time, and
	// a caller waiting for its turn gives up when its context ends rather
	// than queue behind a build that hangs.
	reloading chan struct{}
	current   atomic.Pointer[Generation]
	// pluginDir replaces the configuration's plugin_dir when set
	// (Options.PluginDir, or a published bundle: see FollowBundles), and
	// bundle names that bundle.
	pluginDir atomic.Pointer[string]
	bundle    atomic.Pointer[string]
	// follow is the bundle source FollowBundles reads, and pins the
	// generations built for runs that started on another bundle.
	follow *bundleFollow
	mu     sync.Mutex
	status Status
	closed bool // Close ran: a build that finishes later is dropped
}

// Open loads the first generation; it fails if that does not load.
func Open(ctx context.Context, o Options) (*Host, error) {
	h := &Host{opts: o, log: o.Log, reloading: make(chan struct{}, 1)}
	if o.PluginDir != "" {
		h.pluginDir.Store(&o.PluginDir)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.configPath = o.ConfigPath
	if h.configPath == "" {
		if config.Here(DefaultConfig) {
			h.configPath = DefaultConfig
		}
	}
	cfg, err := h.readConfig()
	if err != nil {
		return nil, err
	}
	if o.Run {
		// What a run needs is checked before anything is opened, so that a
		// refused run leaves no store, audit file or journal behind: its
		// model, its agent and its plugins (loading them writes nothing).
		var list errs.List
		if _, err := newModel(cfg, o.Model, o.ModelRetry); err != nil {
			list.Add(placeModel(cfg, o.Model, err))
		}
		_, err := run.AgentID(o.Agent, cfg.AgentIDs())
		list.Add(err)
		if lg, err := LoadPlugins(ctx, cfg, o); err != nil {
			list.Add(err)
		} else {
			lg.Close()
		}
		if len(list) > 0 {
			list.Sort()
			return nil, list.Err()
		}
	}
	if o.Store != nil {
		h.store = o.Store
	} else if h.store, err = openStore(ctx, cfg, h.log); err != nil {
		return nil, err
	}
	h.audit = &auditFile{}
	h.journal = &journalSink{tap: o.Tap, log: h.log}
	st := h.Reload(ctx)
	if st.LastResult == "failed" {
		h.audit.close()
		h.journal.close()
		return nil, h.lastError()
	}
	return h, nil
}

func openStore(ctx context.Context, c *config.Config, log *slog.Logger) (run.Store, error) {
	if c.Store.Kind == config.StorePostgres {
		s, err := OpenPostgres(ctx, c)
		if err != nil {
			return nil, err
		}
		// Every replica migrates at start (under a lock, so together is
		// fine): the schema is the one this build needs.
		if _, err := s.Migrate(ctx); err != nil {
			s.Close()
			return nil, errs.Wrap(errs.ConfigInvalid, err, "cannot migrate the PostgreSQL schema; check the database and [store] dsn_env").At(c.Pos("store", "kind"))
		}
		return s, nil
	}
	if c.Store.Kind == config.StoreFile {
		s, err := filestore.Open(c.Path(c.Store.Path), log)
		if err != nil {
			return nil, storeError(c, err)
		}
		return s, nil
	}
	// The memory store evicts the least recently used thread past
	// [store] max_threads (never one a run waits on); 0, from a Go-built
	// Config, is the default bound.
	return run.NewMemoryStore(run.WithMaxThreads(c.Store.MaxThreads)), nil
}

func (h *Host) readConfig() (*config.Config, error) {
	c, _, err := h.readConfigData()
	return c, err
}

// readConfigData is readConfig with the bytes it parsed (nil for the
// defaults): a generation's hash must cover the file as it was parsed, not
// as it is later, or a save during the build would be called unchanged.
func (h *Host) readConfigData() (*config.Config, []byte, error) {
	path := h.configPath
	if path == "" {
		// Started without one: an awaken.toml made since (say, while dev
		// runs) is the configuration from the next reload on.
		if !config.Here(DefaultConfig) {
			c := config.Default()
			wd, _ := os.Getwd()
			c.Dir = wd
			// No project here, so nothing is written here: the default
			// audit file would be left in whatever directory dev ran in.
			c.Audit.Path = ""
			return h.override(c), nil, nil
		}
		path = DefaultConfig
	}
	// config.Load, keeping the bytes.
	data, err := config.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	c, err := config.Parse(data, path)
	if err != nil {
		return nil, nil, err
	}
	return h.override(c), data, nil
}

// override applies the options that replace configured values.
func (h *Host) override(c *config.Config) *config.Config {
	if dir := h.pluginDir.Load(); dir != nil {
		if abs, err := filepath.Abs(*dir); err == nil {
			c.PluginDir = abs
		}
	}
	if h.opts.Candidate {
		c.Journal.Path, c.Journal.Kind, c.Audit.Path = "", "", ""
	}
	return c
}

// ConfigPath names the configuration file in use ("" for the defaults).
func (h *Host) ConfigPath() string { return h.configPath }

// Store returns the thread and run store shared by every generation.
func (h *Host) Store() run.Store { return h.store }

// Log returns the host's logger.
func (h *Host) Log() *slog.Logger { return h.log }

// Acquire pins the current generation for a run; Release it at the end.
func (h *Host) Acquire() *Generation {
	for {
		g := h.current.Load()
		g.Lua.Acquire()
		if h.current.Load() == g {
			return g
		}
		// Swapped while pinning: the old one may already be retiring.
		g.Lua.Release()
	}
}

// Current returns the current generation without pinning it.
func (h *Host) Current() *Generation { return h.current.Load() }

// Status returns the last reload's outcome.
func (h *Host) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.status
	s.Errors = append([]string(nil), s.Errors...)
	return s
}

func (h *Host) lastError() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var list errs.List
	for i := range h.status.Problems {
		e := h.status.Problems[i]
		list = append(list, &e)
	}
	if len(list) == 0 {
		return errors.New(strings.Join(h.status.Errors, "\n"))
	}
	return list.Err()
}

// Reload builds a generation from the files as they are now. If it loads
// and differs from the current one, it becomes current and the old one is
// retired; if it fails, the current one stays and the status carries every
// problem with its file:line. Builds run one at a time; a caller whose ctx
// ends while another build runs gets a failed status and changes nothing.
func (h *Host) Reload(ctx context.Context) Status {
	select {
	case h.reloading <- struct{}{}:
	default:
		select {
		case h.reloading <- struct{}{}:
		case <-ctx.Done():
			st := h.Status()
			st.LastResult = "failed"
			st.Errors = []string{"another reload is still running; try again once it ends (" + ctx.Err().Error() + ")"}
			return st
		}
	}
	defer func() { <-h.reloading }()
	start := time.Now()
	g, err := h.build(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.status.LastAttempt = start
	h.status.Took = Duration(time.Since(start))
	if h.closed && err == nil && g != nil {
		// Close ran while this build did: nothing will retire g.
		g.Lua.Close()
		h.audit.close()
		h.journal.close()
		err, g = errors.New("the host is closed"), nil
	}
	switch {
	case err != nil:
		h.status.LastResult = "failed"
		h.status.Failures++
		h.status.Errors, h.status.Problems = nil, nil
		var list errs.List
		list.Add(err)
		list.Sort()
		for _, e := range list {
			h.status.Errors = append(h.status.Errors, e.Error())
			h.status.Problems = append(h.status.Problems, *e)
		}
		msg := "reload failed; the previous generation stays current"
		if h.current.Load() == nil {
			msg = "loading failed"
		}
		h.log.Error(msg, "errors", strings.Join(h.status.Errors, "; "))
	case g == nil:
		h.status.LastResult = "unchanged"
		h.status.Errors, h.status.Problems = nil, nil
	default:
		old := h.current.Swap(g)
		h.status.Generation, h.status.Hash, h.status.LoadedAt = g.ID, g.Hash, g.LoadedAt
		h.status.LastResult = "loaded"
		h.status.Errors, h.status.Problems, h.status.Removed = nil, nil, nil
		h.status.Reloads++
		h.log.Info("generation loaded", "generation", g.ID, "hash", g.Hash[:12], "plugins", strings.Join(g.Lua.PluginIDs(), ","),
			"took", time.Since(start).String())
		if old != nil {
			if gone := removed(old, g); len(gone) > 0 {
				h.status.Removed = gone
				// Deleting a plugin file is a change the user may intend, but
				// it also drops whatever that plugin enforced: say so loudly.
				files := make([]string, len(gone))
				for i, id := range gone {
					files[i] = old.Lua.PluginFileOf(id)
				}
				h.log.Warn("plugins left with this generation; what they enforced no longer applies",
					"generation", g.ID, "removed", strings.Join(gone, ","), "files", strings.Join(files, ","))
			}
			old.Lua.Retire()
		}
	}
	return h.status
}

// removed lists the Lua plugins of old that cur lacks, sorted.
func removed(old, cur *Generation) []string {
	var out []string
	for _, id := range old.Lua.PluginIDs() {
		if !slices.Contains(cur.Lua.PluginIDs(), id) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// build loads a generation; nil without error means nothing changed.
func (h *Host) build(ctx context.Context) (*Generation, error) {
	cfg, data, err := h.readConfigData()
	if err != nil {
		return nil, err
	}
	cur, had := h.current.Load(), ""
	if cur != nil {
		had = cur.pluginDir
	}
	src, err := pluginSource(cfg, had)
	if err != nil {
		return nil, err
	}
	lg, err := h.opts.loader(cfg, src, h.log).Load(ctx)
	err = placePlugins(cfg, err)
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	sum.Write([]byte(lg.Hash))
	sum.Write(data)
	sum.Write([]byte(h.opts.Model))
	hash := hex.EncodeToString(sum.Sum(nil))
	if cur != nil && cur.Hash == hash {
		lg.Close()
		return nil, nil
	}
	g, err := h.assemble(cfg, lg, hash)
	if err != nil {
		lg.Close()
		return nil, err
	}
	if src.FS != nil {
		g.pluginDir = cfg.Path(cfg.PluginDir)
	}
	return g, nil
}

func (h *Host) assemble(cfg *config.Config, lg *luabridge.Generation, hash string) (*Generation, error) {
	id := fmt.Sprintf("g%d", h.seq.Add(1))
	opts := []engine.Option{engine.WithMaxRounds(cfg.Runtime.MaxPhaseRounds), engine.WithLogger(h.log),
		engine.WithStateLimits(state.Limits{MaxValue: int(cfg.Runtime.MaxValueSize), MaxState: int(cfg.Runtime.MaxStateSize)})}
	if cfg.Audit.Path != "" {
		opts = append(opts, engine.WithAudit(h.audit))
	}
	if h.opts.Clock != nil {
		opts = append(opts, engine.WithClock(h.opts.Clock))
	}
	if h.opts.HookObserver != nil {
		opts = append(opts, engine.WithHookObserver(h.opts.HookObserver))
	}
	eng := engine.New(lg.Set, opts...)
	var list errs.List
	toolset, err := hostTools(cfg, lg.Set)
	list.Add(err)
	var agents []run.Agent
	for _, aid := range cfg.AgentIDs() {
		a := cfg.Agents[aid]
		configs, err := cfg.PluginConfigs(lg.Set, aid)
		if err != nil {
			list.Add(err)
			continue
		}
		maxSteps := a.MaxSteps
		if maxSteps == 0 {
			maxSteps = cfg.Runtime.MaxSteps
		}
		var own []string // the host's tools, not a plugin's
		for _, name := range a.Tools {
			if _, isPlugin := lg.Set.All().Tool(name); !isPlugin {
				own = append(own, name)
			}
		}
		agents = append(agents, run.Agent{ID: aid, SystemPrompt: a.SystemPrompt, Plugins: a.Plugins, Tools: own,
			MaxSteps: maxSteps, MaxContinues: continues(a.MaxContinues), Configs: configs, Params: run.ModelParams{Model: a.Model, Temperature: a.Temperature}})
	}
	if err := list.Err(); err != nil {
		return nil, err
	}
	// The new audit file and journal are opened now and take over only
	// once the generation is built: a build that fails keeps both for the
	// generation that stays current.
	swapAudit, dropAudit, err := h.audit.prepare(cfg.Path(cfg.Audit.Path))
	if err != nil {
		return nil, auditError(cfg, err)
	}
	swapJournal, dropJournal, journalOn, err := h.journal.prepare(cfg, h.store)
	if err != nil {
		dropAudit()
		return nil, err
	}
	var ts []plugin.Tool
	names := make([]string, 0, len(toolset))
	for n := range toolset {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ts = append(ts, toolset[n])
	}
	rt, err := run.New(eng, run.WithAgents(agents...), run.WithTools(ts...), run.WithStore(h.store),
		run.WithGeneration(id), run.WithConfigHash(cfg.Hash), run.WithLogger(h.log), run.WithTicketTimeout(time.Duration(cfg.Runtime.TicketTimeout)),
		run.WithMaxHistory(cfg.Server.SessionHistory), run.WithMaxHistorySize(int(cfg.Server.SessionHistorySize)), h.journal.option(hash, journalOn), run.WithBundle(h.bundleFor(cfg)))
	if err != nil {
		dropAudit()
		dropJournal()
		return nil, err
	}
	swapAudit()
	swapJournal()
	// The model is made when a run asks for it: the sidecar and dev never
	// need one, so a missing script or key must not fail their load.
	return &Generation{ID: id, Hash: hash, LoadedAt: time.Now(), Config: cfg, Lua: lg, Runtime: rt, override: h.opts.Model, onRetry: h.opts.ModelRetry}, nil
}

// Close releases the current generation and the audit file. It does not
// wait for a reload in flight; that build is dropped when it ends.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	if g := h.current.Load(); g != nil {
		g.Lua.Retire()
	}
	h.closePins()
	jerr := h.journal.close()
	if c, ok := h.store.(interface{ Close() }); ok && h.opts.Store == nil {
		c.Close() // a pool the host opened ([store] kind = "postgres")
	}
	if err := h.audit.close(); err != nil {
		return err
	}
	return jerr
}

// auditFile appends runtime.audit records as JSON lines to a file that can
// change on reload.
type auditFile struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

// prepare opens the audit file at path for a build, leaving the current
// one in place: swap makes it current (and closes the old one) once the
// build succeeded, drop closes it when the build failed. A file that
// cannot be opened fails the build, and the generation that stays
// current goes on writing where it did.
func (a *auditFile) prepare(path string) (swap, drop func(), err error) {
	a.mu.Lock()
	same := path == a.path
	a.mu.Unlock()
	if same {
		return func() {}, func() {}, nil
	}
	var f *os.File
	if path != "" {
		if dir := filepath.Dir(path); dir != "" {
			_ = os.MkdirAll(dir, 0o755)
		}
		if f, err = os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
			return nil, nil, err
		}
	}
	swap = func() {
		a.mu.Lock()
		old := a.f
		a.f, a.path = f, path
		a.mu.Unlock()
		if old != nil {
			old.Close()
		}
	}
	drop = func() {
		if f != nil {
			f.Close()
		}
	}
	return swap, drop, nil
}

// Append writes one record as a JSON line.
func (a *auditFile) Append(_ context.Context, rec map[string]any) error {
	b, err := marshalLine(rec)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	_, err = a.f.Write(b)
	return err
}

func (a *auditFile) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f, a.path = nil, ""
	return err
}

// continues maps the configured bound (0: none) to run.Agent's (0: the
// default, negative: none).
func continues(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
