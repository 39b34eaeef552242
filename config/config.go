// Package config reads awaken.toml, the one file that says where
// plugins live, which model answers, how the sidecar listens, and which
// agents exist with which plugins and plugin configs.
//
// Every key is optional; Default holds the values of a missing file, and
// Render prints the effective configuration with every default filled in
// (awaken-lua check).
//
// # Strictness
//
// A typo in a config file silently changes behaviour, so Parse rejects
// unknown keys (with "did you mean"), wrong types and bad values as
// config_invalid at file:line, and reports all problems at once (an
// errs.List sorted by position), not only the first. The exceptions are the
// plugin config tables ([plugins.<id>] and [agents.<id>.plugins.<id>]):
// only the plugin knows their shape, so they are kept as canonical values
// (package value) and checked against each plugin's schema by
// PluginConfigs once the plugins are loaded.
//
// # Secrets
//
// awaken.toml is meant to be committed, so it never holds a secret: keys
// such as api_key, token or password are rejected with advice to export the
// secret in an environment variable and name that variable with
// [model] api_key_env or [server] token_env.
//
// # An agent's plugins: a list or a table
//
// The README's configuration uses `plugins` under an agent both for the activation filter (a
// list) and for per-agent plugin configs ([agents.<id>.plugins.<plugin>]),
// and TOML cannot hold both under one key. So an agent's `plugins` takes one
// of two forms:
//
//	[agents.ops]
//	plugins = ["permission", "budget"]   # a list: the activation filter
//
//	[agents.ops.plugins.permission]      # a table: each key is a plugin id,
//	default = "deny"                     # and naming a plugin activates it
//	[agents.ops.plugins]
//	budget = true                        # active, with its [plugins.budget] config
//
// In the table form the filter is the table's keys, sorted; a plugin given a
// table uses that table instead of [plugins.<id>] for this agent (the tables
// are not merged), and a plugin set to true is active with its plugin-wide
// config. An empty list or table activates every plugin. Without any
// [agents.*] table there is one agent, "default", with every plugin active.
package config

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/internal/tomlpos"
)

// Values with a meaning of their own.
const (
	DefaultAgent = "default" // the agent that exists when awaken.toml declares none

	ModelScripted  = "scripted"  // replies from a TOML script; the default
	ModelOpenAI    = "openai"    // an OpenAI-compatible chat-completions endpoint
	ModelAnthropic = "anthropic" // Anthropic's Messages API

	StoreMemory = "memory" // the default: threads live as long as the process
	StoreFile   = "file"   // threads and runs survive a restart
	// StorePostgres keeps threads and runs in PostgreSQL, shared by every
	// replica of a sidecar.
	StorePostgres = "postgres"
)

// Config is a parsed awaken.toml. Parse fills every field, defaults
// included, so callers never check for zero values; relative paths are kept
// as written and resolved with Path.
type Config struct {
	File string // the file it was read from ("" for defaults)
	// Hash is the SHA-256 of the file's bytes, in hex ("" for defaults):
	// a journal's run header names it (config_hash).
	Hash string
	Dir  string // the directory relative paths resolve against ("" means the working directory)

	PluginDir string
	Runtime   Runtime
	Model     Model
	Server    Server
	Store     Store
	Audit     Audit
	Journal   Journal
	Shadow    Shadow
	Tools     Tools
	// Agents by id; never empty (DefaultAgent when the file declares none).
	Agents map[string]*Agent
	// Plugins holds the plugin-wide [plugins.<id>] tables as canonical values
	// (map[string]any, float64 numbers, []any); nil when there are none.
	Plugins map[string]any

	idx *tomlpos.Index // key lines of the source, for PluginConfigs' errors
}

// Runtime is [runtime]: limits of the engine.
type Runtime struct {
	MaxSteps       int      // steps per run (>= 1)
	MaxPhaseRounds int      // EXECUTE rounds per phase (>= 1)
	HookTimeout    Duration // time budget of one hook call (> 0)
	// TicketTimeout is how long a suspended call waits for a decision when
	// its ticket sets no timeout; then the runtime cancels it (0: forever).
	TicketTimeout Duration
	// MaxValueSize bounds one state key's value, encoded as JSON; a run
	// whose plugin writes more fails with state_too_large.
	MaxValueSize Size
	// MaxStateSize bounds a run's whole state, encoded as JSON.
	MaxStateSize Size
}

// Model is [model]: the executor that answers inference requests.
type Model struct {
	Kind string // ModelScripted, ModelOpenAI or ModelAnthropic
	// Script is the scripted model's file, relative to Dir; "" is none, and
	// only run, which needs a model, refuses it (a sidecar never asks one).
	Script string
	// openai and anthropic:
	BaseURL   string   // http(s); required for openai, anthropic's by default
	Model     string   // required
	APIKeyEnv string   // the environment variable holding the key; openai: "" sends none (Ollama); anthropic: ANTHROPIC_API_KEY by default
	Timeout   Duration // per HTTP attempt
	// MaxRetries after the first attempt; 0 means none. (openai.Config reads
	// 0 as its default, so pass -1 there for 0.)
	MaxRetries int
}

// Server is [server]: the sidecar (server/README.md).
type Server struct {
	Addr          string // host:port
	TokenEnv      string // the environment variable holding the bearer token; "" for none
	BodyLimit     Size   // largest request body
	MaxConcurrent int    // requests served at once before 429
	// HookAgent is the agent coding agents' hook events run as, unless
	// the request names one (?agent=).
	HookAgent string
	// SessionHistory bounds the messages a thread keeps of its
	// conversation (its state is kept whole), so a long session costs the
	// same per event as a short one.
	SessionHistory int
	// SessionHistorySize bounds the bytes of those messages, as JSON: a
	// thread of 200 messages of a MiB each would otherwise be kept whole.
	SessionHistorySize Size
	// MaxRuns bounds the runs the sidecar keeps in memory, the idle runs
	// parked in the memory store and the hook sessions
	// (server.Options.MaxRuns): a client that opens sessions and never
	// ends them cannot make it hold more.
	MaxRuns int
}

// Store is [store]: where threads and runs are kept.
type Store struct {
	Kind string // StoreMemory, StoreFile or StorePostgres
	// DSNEnv names the environment variable holding the PostgreSQL
	// connection string (postgres only; a secret never goes in the file).
	DSNEnv string
	// MaxConns bounds the PostgreSQL connections of one process (0: pgx's
	// default, the larger of 4 and the number of CPUs).
	MaxConns int
	// StatementTimeout bounds each PostgreSQL statement (a lock wait
	// included), so a stuck lock or database fails a call rather than
	// holding it (postgres only; > 0).
	StatementTimeout Duration
	// Publish makes serve publish its plugin directory as the bundle every
	// replica loads, at start and on each save (postgres only).
	Publish bool
	Path    string // the file store's directory, relative to Dir; unused by memory
	// MaxThreads bounds the threads the memory store keeps (>= 1): past it,
	// the least recently used thread that no run waits on is evicted, and
	// its thread-scoped state starts fresh, as after a restart. The file
	// store keeps every thread, so a file that sets it with kind = "file"
	// is refused.
	MaxThreads int
}

// Audit is [audit]: the runtime.audit sink.
type Audit struct {
	Path string // JSON lines file, relative to Dir; "" means no audit sink
}

// Journal is [journal]: the decision journal. Off while Path is "".
type Journal struct {
	// Kind is JournalFile (Path's files) or JournalPostgres (the
	// PostgreSQL store's database; needs [store] kind = "postgres").
	Kind        string
	Path        string   // the journal directory, relative to Dir
	MaxFileSize Size     // rotate a file at this size
	MaxAge      Duration // remove files older than this
	Mask        []string // argument and result fields written as "[masked]"
}

// Journal kinds.
const (
	JournalFile     = "file"
	JournalPostgres = "postgres"
)

// On reports whether the journal records anything.
func (j Journal) On() bool { return j.Path != "" || j.Kind == JournalPostgres }

// Shadow is [shadow]: a candidate generation evaluated beside the enforced
// one, never enforced. Off while PluginDir is "".
type Shadow struct {
	PluginDir string // relative to Dir
	Config    string // an awaken.toml for the candidate; "" uses this one's
}

// Tools is [tools]: the workspace of the built-in fs_* and shell tools.
type Tools struct {
	Root         string   // the workspace directory, relative to Dir
	Shell        bool     // the shell tool runs any command the model writes, so it is off unless set
	ShellTimeout Duration // longest a shell call may run
}

// Agent is [agents.<id>].
type Agent struct {
	ID           string
	SystemPrompt string
	// Plugins is the activation filter: the ids of the active plugins, or nil
	// for every plugin. In the table form it is the table's keys, sorted.
	Plugins []string
	// Tools names the host tools offered to the model (fs_read, fs_list,
	// fs_write, shell, or an embedder's own); empty offers none.
	Tools    []string
	MaxSteps int // 0 means Runtime.MaxSteps
	// MaxContinues bounds runtime.continue per run (default 3; 0: none).
	MaxContinues int
	Model        string   // overrides the model name for this agent; "" keeps it
	Temperature  *float64 // nil leaves the model's default
	// PluginConfigs holds the agent's own [agents.<id>.plugins.<plugin>]
	// tables (canonical values), which replace [plugins.<plugin>] for this
	// agent; nil when there are none. Every id here is also in Plugins.
	PluginConfigs map[string]any
}

// Defaults that Default and Parse share.
const (
	defaultContinues    = 3
	defaultSteps        = 16
	defaultStorePath    = ".awaken/store"
	defaultMaxThreads   = 10000 // run.DefaultMaxThreads
	defaultHookTimeout  = Duration(100 * time.Millisecond)
	defaultMaxValueSize = MiB      // state.DefaultMaxValue
	defaultMaxStateSize = 16 * MiB // state.DefaultMaxState
	defaultModelTimeout = Duration(60 * time.Second)
	defaultShellTimeout = Duration(10 * time.Second)
	defaultStmtTimeout  = Duration(10 * time.Second)    // pgstore.DefaultStatementTimeout
	defaultJournalSize  = 64 * MiB                      // journal.DefaultMaxFileSize
	defaultJournalAge   = Duration(30 * 24 * time.Hour) // journal.DefaultMaxAge
)

// defaultTools are offered to an agent that does not list its tools: they
// only read, inside the workspace.
var defaultTools = []string{"fs_read", "fs_list"}

// Default is the configuration of an empty awaken.toml: the scripted model
// with no script (a project names its own: a path here would be resolved in
// the user's project, where it is not), a memory store and one agent with
// every plugin active, so everything runs offline.
func Default() *Config {
	return &Config{
		PluginDir: "scripts",
		Runtime: Runtime{MaxSteps: defaultSteps, MaxPhaseRounds: defaultSteps, HookTimeout: defaultHookTimeout,
			MaxValueSize: defaultMaxValueSize, MaxStateSize: defaultMaxStateSize},
		Model:   Model{Kind: ModelScripted, Timeout: defaultModelTimeout, MaxRetries: 3},
		Server:  Server{Addr: "127.0.0.1:7878", TokenEnv: "AWAKEN_TOKEN", BodyLimit: MiB, MaxConcurrent: 64, HookAgent: DefaultAgent, SessionHistory: 200, SessionHistorySize: 4 * MiB, MaxRuns: 10000},
		Store:   Store{Kind: StoreMemory, Path: defaultStorePath, MaxThreads: defaultMaxThreads, DSNEnv: "AWAKEN_PG_DSN", StatementTimeout: defaultStmtTimeout},
		Audit:   Audit{Path: "audit.jsonl"},
		Journal: Journal{Kind: JournalFile, MaxFileSize: defaultJournalSize, MaxAge: defaultJournalAge},
		Tools:   Tools{Root: ".", ShellTimeout: defaultShellTimeout},
		Agents:  map[string]*Agent{DefaultAgent: newAgent(DefaultAgent)},
	}
}

func newAgent(id string) *Agent {
	return &Agent{ID: id, Tools: slices.Clone(defaultTools), MaxContinues: defaultContinues}
}

// Load reads and parses the file at path. The path "" means no file: the
// defaults, with relative paths resolved against the working directory. A
// missing file is a config_invalid error naming it, because a mistyped
// --config must not silently run with defaults.
func Load(path string) (*Config, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// MaxFileSize bounds a configuration file: a path that names something
// else (a log, /dev/zero) must fail, not fill memory.
const MaxFileSize = 16 * MiB

// ReadFile reads a configuration file of at most MaxFileSize bytes; its
// errors are config_invalid at the file.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, ReadError(path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(MaxFileSize)+1))
	if err != nil {
		return nil, ReadError(path, err)
	}
	if len(data) > int(MaxFileSize) {
		return nil, errs.New(errs.ConfigInvalid, "cannot read the configuration file: it is larger than %s, which no awaken.toml needs; check that --config names the project's awaken.toml",
			MaxFileSize).At(errs.Pos{File: path})
	}
	return data, nil
}

// ReadError is the error for a configuration file that cannot be read. A
// link to a file that is not there is named as one: "no such file" about
// a name ls shows would puzzle.
func ReadError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		if target, lerr := os.Readlink(path); lerr == nil {
			return errs.New(errs.ConfigInvalid, "cannot read the configuration file: %s is a link to %s, which does not exist; fix the link, or replace it with the file",
				path, target).At(errs.Pos{File: path})
		}
	}
	return errs.Wrap(errs.ConfigInvalid, err, "cannot read the configuration file").At(errs.Pos{File: path})
}

// Here reports whether the current directory has an awaken.toml (name),
// a link to a file that is not there included: that is the project's
// configuration, which must fail to load rather than be taken for none.
func Here(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

// Parse parses awaken.toml's content; file names it in errors and sets
// Dir. On any problem it returns nil and every problem found (an *errs.Error
// or an errs.List, each config_invalid at file:line).
func Parse(data []byte, file string) (*Config, error) {
	return parse(data, file)
}

// Path resolves a path from the file (plugin_dir, model.script, store.path,
// audit.path, tools.root) against Dir, so awaken.toml means the same thing
// from any working directory. "" stays "" (for audit.path: no sink), and an
// absolute path is returned as is.
func (c *Config) Path(rel string) string {
	if rel == "" || filepath.IsAbs(rel) || c.Dir == "" {
		return rel
	}
	return filepath.Join(c.Dir, rel)
}

// Pos is where the file writes the value at path, a key split at its dots
// ("agents", "ops", "tools"), or else the nearest table above it that the
// file writes, so a problem found after parsing (a tool run would refuse, a
// path it cannot write) still names awaken.toml:line. It is the file alone
// when none of them is written, and the zero Pos for a Config that no file
// made.
func (c *Config) Pos(path ...string) errs.Pos {
	for n := len(path); n > 0; n-- {
		if line := c.idx.Line(toml.Key(path[:n]).String(), 0); line > 0 {
			return errs.Pos{File: c.File, Line: line}
		}
	}
	return errs.Pos{File: c.File}
}

// Invalid is a config_invalid problem with the value at path, placed as Pos
// places it: "<path>: <message>".
func (c *Config) Invalid(path []string, format string, args ...any) *errs.Error {
	name := toml.Key(path).String()
	return c.errorAt(c.Pos(path...), name, format, args...)
}

// PluginPos is where the file first names plugin id: its [plugins.<id>]
// table, or an agent's plugins entry (list or table form); the file alone
// when it names it nowhere.
func (c *Config) PluginPos(id string) errs.Pos {
	best := 0
	consider := func(k toml.Key) {
		if l := c.idx.Line(k.String(), 0); l > 0 && (best == 0 || l < best) {
			best = l
		}
	}
	consider(toml.Key{"plugins", id})
	for _, aid := range c.AgentIDs() {
		a := c.Agents[aid]
		if _, ok := a.PluginConfigs[id]; ok {
			consider(toml.Key{"agents", aid, "plugins", id})
		} else if slices.Contains(a.Plugins, id) {
			consider(toml.Key{"agents", aid, "plugins"})
		}
	}
	return errs.Pos{File: c.File, Line: best}
}

// Enabled lists, sorted and once each, every plugin id the file names:
// agent filters, agent plugin configs and [plugins.*]. The loader uses it to
// load the stdlib plugins a config asks for, so shipped plugins cost nothing
// until named.
func (c *Config) Enabled() []string {
	seen := map[string]bool{}
	for id := range c.Plugins {
		seen[id] = true
	}
	for _, a := range c.Agents {
		for _, id := range a.Plugins {
			seen[id] = true
		}
		for id := range a.PluginConfigs {
			seen[id] = true
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// AgentIDs lists the agents' ids, sorted.
func (c *Config) AgentIDs() []string {
	out := make([]string, 0, len(c.Agents))
	for id := range c.Agents {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}
