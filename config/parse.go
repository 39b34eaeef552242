package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/internal/tomlpos"
)

// The file is decoded into a plain map and walked against the tables below,
// rather than decoded into structs and checked with MetaData.Undecoded: the
// struct decoder stops at the first type error, and users should see every
// problem of a file at once. The walk rejects exactly the keys Undecoded
// would report, and it lets an agent's plugins be a list or a table.

// parser collects every problem of one file.
type parser struct {
	file string
	idx  *tomlpos.Index
	c    *Config
	list errs.List

	maxThreadsSet bool // [store] max_threads is in the file
}

func parse(data []byte, file string) (*Config, error) {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, syntaxError(err, file)
	}
	p := &parser{file: file, idx: tomlpos.Scan(string(data)), c: Default()}
	p.c.File = file
	sum := sha256.Sum256(data)
	p.c.Hash = hex.EncodeToString(sum[:])
	if file != "" {
		p.c.Dir = filepath.Dir(file)
	}
	p.c.idx = p.idx
	p.top(raw)
	p.check()
	p.list.Sort()
	if err := p.list.Err(); err != nil {
		return nil, err
	}
	return p.c, nil
}

// syntaxError places a TOML syntax error, adding advice where the TOML
// message alone would puzzle.
func syntaxError(err error, file string) error {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return errs.Wrap(errs.ConfigInvalid, err, "cannot parse the configuration").At(errs.Pos{File: file})
	}
	msg := pe.Message
	if strings.Contains(msg, "plugins") && strings.Contains(msg, "already") && strings.HasPrefix(pe.LastKey, "agents.") {
		msg = strings.TrimSuffix(msg, ".") + "; an agent's plugins is either a list (the activation filter) or a table of per-plugin configs, not both: " +
			"in the table form each plugin id given a table is active with that config, and <id> = true activates one with its [plugins.<id>] config"
	}
	return &errs.Error{Code: errs.ConfigInvalid, Pos: errs.Pos{File: file, Line: pe.Position.Line, Col: pe.Position.Col}, Msg: msg}
}

// at is where key k is defined, or the file alone when the line is unknown.
func (p *parser) at(k toml.Key) errs.Pos {
	return errs.Pos{File: p.file, Line: p.idx.Line(k.String(), 0)}
}

// atFirst is the position of the first of keys that is defined; keys run
// from the most precise (the value at fault) to the least (its table).
func (p *parser) atFirst(keys ...toml.Key) errs.Pos {
	for _, k := range keys {
		if pos := p.at(k); pos.Line > 0 {
			return pos
		}
	}
	return errs.Pos{File: p.file}
}

// fail reports a problem with the value at k: "<k>: <message>".
func (p *parser) fail(k toml.Key, format string, args ...any) {
	p.failAt(p.at(k), k.String(), format, args...)
}

// failAt reports a problem with the value named name (a dotted key, perhaps
// with list indexes) at pos.
func (p *parser) failAt(pos errs.Pos, name string, format string, args ...any) {
	p.list.Add(&errs.Error{Code: errs.ConfigInvalid, Pos: pos, Key: name,
		Msg: name + ": " + fmt.Sprintf(format, args...)})
}

// key extends k without sharing its backing array.
func key(k toml.Key, name string) toml.Key {
	return append(slices.Clip(k), name)
}

// field is one key a table knows and what to do with its value.
type field struct {
	name string
	set  func(k toml.Key, v any)
}

// table walks a strict table: known keys go to their field, unknown keys are
// reported. where names the table in messages ("[runtime]").
func (p *parser) table(k toml.Key, v any, where string, fields []field) {
	m, ok := p.asTable(k, v, where)
	if !ok {
		return
	}
	p.fields(k, m, where, fields)
}

func (p *parser) fields(k toml.Key, m map[string]any, where string, fields []field) {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	for _, name := range value.SortedKeys(m) {
		fk := key(k, name)
		i := slices.Index(names, name)
		if i < 0 {
			p.unknown(fk, names, where)
			continue
		}
		fields[i].set(fk, m[name])
	}
}

func (p *parser) asTable(k toml.Key, v any, where string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		p.fail(k, "expected a table (%s), got %s", where, typeName(v))
	}
	return m, ok
}

// unknown reports a key the table does not know, with a likely correction,
// or else the keys it does know.
func (p *parser) unknown(k toml.Key, known []string, where string) {
	name := k[len(k)-1]
	if looksSecret(name) {
		p.fail(k, "awaken.toml must not hold secrets, since it is meant to be shared; %s", secretAdvice(k))
		return
	}
	msg := "unknown key " + strconv.Quote(k.String())
	if s := errs.Suggest(name, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	} else {
		msg += "; " + where + " takes " + strings.Join(known, ", ")
	}
	p.list.Add(&errs.Error{Code: errs.ConfigInvalid, Pos: p.at(k), Key: k.String(), Msg: msg})
}

var secretNames = map[string]bool{
	"key": true, "api_key": true, "apikey": true, "token": true, "api_token": true,
	"access_token": true, "auth_token": true, "bearer": true, "bearer_token": true,
	"auth": true, "authorization": true, "credentials": true,
}

// looksSecret catches keys that would hold a secret inline. Names ending in
// _env are the right way to name one, or typos of it.
func looksSecret(name string) bool {
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "_env") {
		return false
	}
	return secretNames[n] || strings.Contains(n, "secret") || strings.Contains(n, "password") ||
		strings.Contains(n, "passwd") || strings.HasSuffix(n, "_token") || strings.HasSuffix(n, "_apikey") ||
		strings.HasSuffix(n, "api_key")
}

func secretAdvice(k toml.Key) string {
	switch k[0] {
	case "model":
		return `export the key in an environment variable and name it with api_key_env = "OPENAI_API_KEY"`
	case "server":
		return `export the secret in an environment variable and name it with token_env = "AWAKEN_TOKEN"`
	}
	return "export the secret in an environment variable and name the variable instead ([model] api_key_env, [server] token_env)"
}

// typeName names a decoded TOML value's type for messages. It never shows
// the value, which might be a secret.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case time.Time:
		return "a date-time"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

// top walks the whole file.
func (p *parser) top(m map[string]any) {
	c := p.c
	p.fields(nil, m, "the top level", []field{
		{"plugin_dir", p.str(&c.PluginDir, nonEmpty(`name the plugin directory, such as "scripts"`))},
		{"runtime", func(k toml.Key, v any) {
			p.table(k, v, "[runtime]", []field{
				{"max_steps", p.integer(&c.Runtime.MaxSteps, 1)},
				{"max_phase_rounds", p.integer(&c.Runtime.MaxPhaseRounds, 1)},
				{"hook_timeout", p.duration(&c.Runtime.HookTimeout)},
				{"ticket_timeout", p.durationIn(&c.Runtime.TicketTimeout, true, maxTicketTimeout)},
				{"max_value_size", p.stateLimit(&c.Runtime.MaxValueSize, KiB)},
				{"max_state_size", p.stateLimit(&c.Runtime.MaxStateSize, 64*KiB)},
			})
		}},
		{"model", func(k toml.Key, v any) {
			p.table(k, v, "[model]", []field{
				{"kind", p.str(&c.Model.Kind, oneOf(ModelScripted, ModelOpenAI, ModelAnthropic))},
				{"script", p.str(&c.Model.Script, nil)},
				{"base_url", p.str(&c.Model.BaseURL, httpURL)},
				{"model", p.str(&c.Model.Model, nil)},
				{"api_key_env", p.envName(&c.Model.APIKeyEnv, "OPENAI_API_KEY")},
				{"timeout", p.duration(&c.Model.Timeout)},
				{"max_retries", p.integer(&c.Model.MaxRetries, 0)},
			})
		}},
		{"server", func(k toml.Key, v any) {
			p.table(k, v, "[server]", []field{
				{"addr", p.str(&c.Server.Addr, hostPort)},
				{"token_env", p.envName(&c.Server.TokenEnv, "AWAKEN_TOKEN")},
				{"body_limit", p.size(&c.Server.BodyLimit)},
				{"max_concurrent", p.integer(&c.Server.MaxConcurrent, 1)},
				{"hook_agent", p.str(&c.Server.HookAgent, nil)},
				{"session_history", p.integer(&c.Server.SessionHistory, 1)},
				{"session_history_size", p.size(&c.Server.SessionHistorySize)},
				{"max_runs", p.integer(&c.Server.MaxRuns, 1)},
			})
		}},
		{"store", func(k toml.Key, v any) {
			p.table(k, v, "[store]", []field{
				{"kind", p.str(&c.Store.Kind, oneOf(StoreMemory, StoreFile, StorePostgres))},
				{"dsn_env", p.envName(&c.Store.DSNEnv, "AWAKEN_PG_DSN")},
				{"max_conns", p.integer(&c.Store.MaxConns, 2)},
				{"statement_timeout", p.duration(&c.Store.StatementTimeout)},
				{"publish", p.boolean(&c.Store.Publish)},
				{"max_threads", p.maxThreads(&c.Store.MaxThreads)},
				{"path", p.str(&c.Store.Path, nonEmpty(`leave path out for the default "`+defaultStorePath+`"`))},
			})
		}},
		{"audit", func(k toml.Key, v any) {
			p.table(k, v, "[audit]", []field{
				{"path", p.str(&c.Audit.Path, nil)}, // "" turns the audit sink off
			})
		}},
		{"journal", func(k toml.Key, v any) {
			p.table(k, v, "[journal]", []field{
				{"kind", p.str(&c.Journal.Kind, oneOf(JournalFile, JournalPostgres))},
				{"path", p.str(&c.Journal.Path, nil)}, // "" turns the file journal off
				{"max_file_size", p.size(&c.Journal.MaxFileSize)},
				{"max_age", p.durationIn(&c.Journal.MaxAge, false, Duration(10*365*24*time.Hour))},
				{"mask", p.strList(&c.Journal.Mask)},
			})
		}},
		{"shadow", func(k toml.Key, v any) {
			p.table(k, v, "[shadow]", []field{
				{"plugin_dir", p.str(&c.Shadow.PluginDir, nonEmpty(`name the candidate's plugin directory, such as "candidate"`))},
				{"config", p.str(&c.Shadow.Config, nil)},
			})
		}},
		{"tools", func(k toml.Key, v any) {
			p.table(k, v, "[tools]", []field{
				{"root", p.str(&c.Tools.Root, nonEmpty(`use "." for the directory of awaken.toml`))},
				{"shell", p.boolean(&c.Tools.Shell)},
				{"shell_timeout", p.duration(&c.Tools.ShellTimeout)},
			})
		}},
		{"agents", p.agents},
		{"plugins", p.plugins},
	})
}

// check does the checks that span keys, once every key is read.
func (p *parser) check() {
	c := p.c
	if sk := (toml.Key{"store"}); p.maxThreadsSet && c.Store.Kind != StoreMemory {
		p.failAt(p.atFirst(key(sk, "max_threads"), sk), "store.max_threads",
			`applies to the memory store only: the %s store keeps every thread on disk, so there is nothing to bound; remove max_threads, or set kind = "memory"`, c.Store.Kind)
	}
	// Only the PostgreSQL store reads these: set for another kind they
	// would be ignored, and the user would believe them in force.
	if sk := (toml.Key{"store"}); c.Store.Publish && c.Store.Kind != StorePostgres {
		p.failAt(p.atFirst(key(sk, "publish"), sk), "store.publish",
			`applies to the PostgreSQL store only: replicas share bundles through its database; set kind = "postgres", or remove publish`)
	}
	if sk := (toml.Key{"store"}); p.at(key(sk, "max_conns")).Line > 0 && c.Store.Kind != StorePostgres {
		p.failAt(p.atFirst(key(sk, "max_conns"), sk), "store.max_conns",
			`applies to the PostgreSQL store only: it bounds the connections to its database; set kind = "postgres", or remove max_conns`)
	}
	if sk := (toml.Key{"store"}); p.at(key(sk, "statement_timeout")).Line > 0 && c.Store.Kind != StorePostgres {
		p.failAt(p.atFirst(key(sk, "statement_timeout"), sk), "store.statement_timeout",
			`applies to the PostgreSQL store only: it bounds each statement its database runs; set kind = "postgres", or remove statement_timeout`)
	}
	if sk := (toml.Key{"server"}); p.at(key(sk, "hook_agent")).Line > 0 && c.Agents[c.Server.HookAgent] == nil {
		ids := make([]string, 0, len(c.Agents))
		for id := range c.Agents {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		p.failAt(p.atFirst(key(sk, "hook_agent"), sk), "server.hook_agent",
			"no agent %q is declared%s; agents: %s (declare [agents.%s], or name one of them)",
			c.Server.HookAgent, errs.DidYouMean(c.Server.HookAgent, ids), strings.Join(ids, ", "), c.Server.HookAgent)
	}
	if jk := (toml.Key{"journal"}); c.Journal.Kind == JournalPostgres && c.Store.Kind != StorePostgres {
		p.failAt(p.atFirst(key(jk, "kind"), jk), "journal.kind",
			`"postgres" keeps the journal in the PostgreSQL store's database; set [store] kind = "postgres", or keep the journal in files (kind = "file" with path)`)
	}
	if jk := (toml.Key{"journal"}); c.Journal.Kind == JournalPostgres && c.Journal.Path != "" {
		p.failAt(p.atFirst(key(jk, "path"), jk), "journal.path",
			`applies to the file journal only: kind = "postgres" keeps the journal in the database, so no file is written there; remove path, or set kind = "file"`)
	}
	// Without plugin_dir there is no candidate to read config: serve
	// would ignore it, and the user would believe a shadow is running.
	if shk := (toml.Key{"shadow"}); c.Shadow.Config != "" && c.Shadow.PluginDir == "" {
		p.failAt(p.atFirst(key(shk, "config"), shk), "shadow.config",
			`names the candidate's configuration, but no candidate is set; add plugin_dir = "candidate" (the candidate's plugin directory), or remove config`)
	}
	if rk := (toml.Key{"runtime"}); c.Runtime.MaxValueSize > c.Runtime.MaxStateSize {
		p.failAt(p.atFirst(key(rk, "max_value_size"), key(rk, "max_state_size"), rk), "runtime.max_value_size",
			"%s is larger than max_state_size (%s), which bounds the whole state; lower max_value_size or raise max_state_size",
			c.Runtime.MaxValueSize, c.Runtime.MaxStateSize)
	}
	mk := toml.Key{"model"}
	switch c.Model.Kind {
	case ModelOpenAI:
		if c.Model.BaseURL == "" {
			p.failAt(p.atFirst(key(mk, "base_url"), key(mk, "kind"), mk), "model.base_url",
				`the openai model needs an endpoint, such as "https://api.openai.com/v1" or "http://localhost:11434/v1"`)
		}
		if c.Model.Model == "" {
			p.failAt(p.atFirst(key(mk, "model"), key(mk, "kind"), mk), "model.model",
				`the openai model needs a model name, such as "gpt-4o-mini" or "llama3.1"`)
		}
	case ModelAnthropic:
		if c.Model.Model == "" {
			p.failAt(p.atFirst(key(mk, "model"), key(mk, "kind"), mk), "model.model",
				`the anthropic model needs a model name, such as "claude-sonnet-4-5"`)
		}
	}
}

// A check returns what is wrong with a value, or "".
type check func(string) string

func nonEmpty(hint string) check {
	return func(s string) string {
		if s == "" {
			return "must not be empty; " + hint
		}
		return ""
	}
}

func oneOf(allowed ...string) check {
	return func(s string) string {
		if slices.Contains(allowed, s) {
			return ""
		}
		quoted := make([]string, len(allowed))
		for i, a := range allowed {
			quoted[i] = strconv.Quote(a)
		}
		return fmt.Sprintf("unknown value %q%s; use %s", s, errs.DidYouMean(s, allowed), strings.Join(quoted, " or "))
	}
}

func httpURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an http(s) URL; write one such as \"https://api.openai.com/v1\"", s)
	}
	return ""
}

func hostPort(s string) string {
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr == nil && n >= 0 && n <= 65535 {
			return ""
		}
	}
	return fmt.Sprintf("%q is not host:port; write one such as \"127.0.0.1:7878\"", s)
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// str reads a string into dst, then runs ok on it.
func (p *parser) str(dst *string, ok check) func(toml.Key, any) {
	return func(k toml.Key, v any) {
		s, isStr := v.(string)
		if !isStr {
			p.fail(k, "expected a string, got %s", typeName(v))
			return
		}
		if ok != nil {
			if msg := ok(s); msg != "" {
				p.fail(k, "%s", msg)
				return
			}
		}
		*dst = s
	}
}

// envName reads the name of an environment variable. The message never
// shows the value: a value that is not a name is most likely the secret
// itself, pasted in the wrong place.
func (p *parser) envName(dst *string, example string) func(toml.Key, any) {
	return func(k toml.Key, v any) {
		s, isStr := v.(string)
		switch {
		case !isStr:
			p.fail(k, "expected the name of an environment variable, got %s", typeName(v))
		case s != "" && !envNamePattern.MatchString(s):
			p.fail(k, "must name an environment variable (letters, digits and _, such as %q), not hold the secret itself; "+
				"export the secret in that variable", example)
		default:
			*dst = s
		}
	}
}

// maxThreads reads [store] max_threads, the memory store's bound.
func (p *parser) maxThreads(dst *int) func(toml.Key, any) {
	return func(k toml.Key, v any) {
		p.maxThreadsSet = true
		n, isInt := v.(int64)
		switch {
		case !isInt:
			p.fail(k, "expected an integer, got %s", typeName(v))
		case n < 1:
			p.fail(k, "must be at least 1, got %d: it is how many threads the memory store keeps before evicting the least recently used; "+
				"leave it out for the default %d", n, defaultMaxThreads)
		case n > math.MaxInt32:
			p.fail(k, "%d is too large (at most %d)", n, math.MaxInt32)
		default:
			*dst = int(n)
		}
	}
}

// integer reads an integer of at least min.
// strList reads an array of non-empty strings; an empty one is nil, as
// when the key is left out, so a rendered `mask = []` reads back the same.
func (p *parser) strList(dst *[]string) func(toml.Key, any) {
	return func(k toml.Key, v any) {
		list, ok := v.([]any)
		if !ok {
			p.fail(k, "expected an array of strings such as [\"password\", \"headers.authorization\"], got %s", typeName(v))
			return
		}
		out := make([]string, 0, len(list))
		for i, x := range list {
			s, ok := x.(string)
			if !ok || strings.TrimSpace(s) == "" {
				p.fail(k, "element %d: expected a non-empty string, got %s", i+1, typeName(x))
				return
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			out = nil
		}
		*dst = out
	}
}

func (p *parser) integer(dst *int, min int) func(toml.Key, any) {
	return func(k toml.Key, v any) {
		n, isInt := v.(int64)
		switch {
		case !isInt:
			p.fail(k, "expected an integer, got %s", typeName(v))
		case n < int64(min):
			p.fail(k, "must be at least %d, got %d", min, n)
		case n > math.MaxInt32:
			p.fail(k, "%d is too large (at most %d)", n, math.MaxInt32)
		default:
			*dst = int(n)
		}
	}
}

func (p *parser) boolean(dst *bool) func(toml.Key, any) {
	return func(k toml.Key, v any) {
		b, isBool := v.(bool)
		if !isBool {
			p.fail(k, "expected true or false, got %s", typeName(v))
			return
		}
		*dst = b
	}
}

// Bounds of every duration and size in the file. Nothing awaken.toml times
// (a hook call, a model call, a shell command) should take an hour, and
// nothing it sizes (a request body, a state value) should take a gigabyte: a
// value past these is a typo or a unit slip, and a limit that large does not
// bound anything.
const (
	maxDuration = Duration(time.Hour)
	maxSize     = GiB
	// An approval may wait for days, never for months.
	maxTicketTimeout = Duration(gate.MaxTicketTimeout)
)

// duration reads a duration string in (0, maxDuration]. NaN, infinities
// and numbers without a unit are not durations, so they fail too.
func (p *parser) duration(dst *Duration) func(toml.Key, any) {
	return p.durationIn(dst, false, maxDuration)
}

// durationIn reads a duration string in (0, max], or [0, max] with zero.
func (p *parser) durationIn(dst *Duration, zero bool, max Duration) func(toml.Key, any) {
	return func(k toml.Key, v any) {
		s, isStr := v.(string)
		if !isStr {
			p.fail(k, "expected a duration string such as \"100ms\" or \"10s\", got %s", typeName(v))
			return
		}
		var d Duration
		if err := d.UnmarshalText([]byte(s)); err != nil {
			p.fail(k, "%v", err)
			return
		}
		switch {
		case d < 0 && zero:
			p.fail(k, "must be \"0s\" (none) or positive, got %q", s)
			return
		case d < 0 || (d == 0 && !zero):
			p.fail(k, "must be positive, got %q", s)
			return
		case d > max && max == maxDuration:
			p.fail(k, "must be at most %s, got %q; a wait that long is a mistake (did you mean ms or s?)", max, s)
			return
		case d > max:
			p.fail(k, "must be at most %s, got %q", max, s)
			return
		}
		*dst = d
	}
}

// size reads a size in (0, maxSize], as a string with a unit or an integer.
func (p *parser) size(dst *Size) func(toml.Key, any) {
	return func(k toml.Key, v any) {
		var s Size
		switch x := v.(type) {
		case string:
			if err := s.UnmarshalText([]byte(x)); err != nil {
				p.fail(k, "%v", err)
				return
			}
		case int64:
			s = Size(x)
		default:
			p.fail(k, "expected a size such as \"1MiB\" or a number of bytes, got %s", typeName(v))
			return
		}
		switch {
		case s <= 0:
			p.fail(k, "must be positive, got %d", s)
			return
		case s > maxSize:
			p.fail(k, "must be at most %s, got %s", maxSize, s)
			return
		}
		*dst = s
	}
}

// maxStateLimit is the largest [runtime] max_value_size or max_state_size
// (state.MaxLimit): sizes are kept in 32 bits.
const maxStateLimit = GiB

// stateLimit reads a state size limit of at least min: the runtime's own
// records need room.
func (p *parser) stateLimit(dst *Size, min Size) func(toml.Key, any) {
	read := p.size(dst)
	return func(k toml.Key, v any) {
		old := *dst
		read(k, v)
		switch {
		case *dst == old:
		case *dst < min:
			p.fail(k, "must be at least %s, got %s", min, *dst)
			*dst = old
		case *dst > maxStateLimit:
			p.fail(k, "must be at most %s, got %s", Size(maxStateLimit), *dst)
			*dst = old
		}
	}
}

// agents reads [agents.*]. Declaring any agent replaces the default one.
func (p *parser) agents(k toml.Key, v any) {
	m, ok := p.asTable(k, v, "[agents.<id>]")
	if !ok || len(m) == 0 {
		return
	}
	agents := make(map[string]*Agent, len(m))
	for _, id := range value.SortedKeys(m) {
		ak := key(k, id)
		if id == "" {
			p.fail(ak, "an agent needs a non-empty id")
			continue
		}
		a := newAgent(id)
		p.table(ak, m[id], "[agents."+quoteKey(id)+"]", []field{
			{"system_prompt", p.str(&a.SystemPrompt, nil)},
			{"plugins", func(k toml.Key, v any) { p.agentPlugins(k, v, a) }},
			{"tools", func(k toml.Key, v any) { p.agentTools(k, v, a) }},
			{"max_steps", p.integer(&a.MaxSteps, 0)},
			{"max_continues", p.integer(&a.MaxContinues, 0)},
			{"model", p.str(&a.Model, nil)},
			{"temperature", func(k toml.Key, v any) { p.temperature(k, v, a) }},
		})
		agents[id] = a
	}
	p.c.Agents = agents
}

// agentPlugins reads an agent's plugins in either form (see the package doc).
func (p *parser) agentPlugins(k toml.Key, v any, a *Agent) {
	switch x := v.(type) {
	case []any:
		var ids []string
		for i, e := range x {
			id, ok := e.(string)
			switch {
			case !ok:
				p.fail(k, "item %d: expected a plugin id, got %s", i+1, typeName(e))
			case id == "":
				p.fail(k, "item %d: a plugin id must not be empty", i+1)
			case slices.Contains(ids, id):
				p.fail(k, "plugin %q is listed twice", id)
			default:
				ids = append(ids, id)
			}
		}
		a.Plugins = ids // empty: every plugin is active
	case map[string]any:
		var ids []string
		for _, id := range value.SortedKeys(x) {
			ik := key(k, id)
			switch c := x[id].(type) {
			case map[string]any:
				if id == "" {
					p.fail(ik, "a plugin id must not be empty")
					continue
				}
				if a.PluginConfigs == nil {
					a.PluginConfigs = map[string]any{}
				}
				a.PluginConfigs[id] = p.canon(ik, nil, ik.String(), c)
			case bool:
				if !c {
					p.fail(ik, "set it to true to activate plugin %q with its [plugins.%s] config, or remove it", id, quoteKey(id))
					continue
				}
				if id == "" {
					p.fail(ik, "a plugin id must not be empty")
					continue
				}
			default:
				p.fail(ik, "expected a table (this agent's config for plugin %q) or true (active with its plugin-wide config), got %s",
					id, typeName(c))
				continue
			}
			ids = append(ids, id)
		}
		a.Plugins = ids
	default:
		p.fail(k, "expected a list of plugin ids (the activation filter) or a table of per-plugin configs, got %s", typeName(v))
	}
}

func (p *parser) agentTools(k toml.Key, v any, a *Agent) {
	x, ok := v.([]any)
	if !ok {
		p.fail(k, "expected a list of tool names, such as [\"fs_read\", \"fs_list\"], got %s", typeName(v))
		return
	}
	names := []string{} // an empty list offers no tools, unlike a missing one
	for i, e := range x {
		name, ok := e.(string)
		switch {
		case !ok:
			p.fail(k, "item %d: expected a tool name, got %s", i+1, typeName(e))
		case name == "":
			p.fail(k, "item %d: a tool name must not be empty", i+1)
		case !plugin.ValidToolName(name):
			p.fail(k, "item %d: %q is not a tool name (letters, digits, _, . and -, at most 64)", i+1, name)
		case slices.Contains(names, name):
			p.fail(k, "tool %q is listed twice", name)
		default:
			names = append(names, name)
		}
	}
	a.Tools = names
}

func (p *parser) temperature(k toml.Key, v any, a *Agent) {
	var t float64
	switch x := v.(type) {
	case float64:
		t = x
	case int64:
		t = float64(x)
	default:
		p.fail(k, "expected a number, got %s", typeName(v))
		return
	}
	if !(t >= 0 && t <= 2) { // also refuses nan
		p.fail(k, "must be between 0 and 2, got %s", value.String(t))
		return
	}
	a.Temperature = &t
}

// plugins reads the plugin-wide [plugins.<id>] tables.
func (p *parser) plugins(k toml.Key, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		p.fail(k, "expected a table of plugin configs ([plugins.<id>]), got %s; to choose the active plugins, write plugins = [...] in [agents.<id>]",
			typeName(v))
		return
	}
	for _, id := range value.SortedKeys(m) {
		ik := key(k, id)
		t, ok := m[id].(map[string]any)
		switch {
		case id == "":
			p.fail(ik, "a plugin id must not be empty")
		case !ok:
			p.fail(ik, "expected a table (the config of plugin %q), got %s", id, typeName(m[id]))
		default:
			if p.c.Plugins == nil {
				p.c.Plugins = map[string]any{}
			}
			p.c.Plugins[id] = p.canon(ik, nil, ik.String(), t)
		}
	}
}

// maxExact bounds integers in plugin configs: numbers are float64 there
// (package value), which holds every integer up to 2^53 exactly.
const maxExact = 1 << 53

// canon turns a decoded TOML value inside a plugin config into a canonical
// value. The value is at segs inside the plugin's table k, which finds its
// line (the n-th element of an array is looked for among that array's
// elements, not at the array's first); path names the value, with list
// indexes.
func (p *parser) canon(k toml.Key, segs []seg, path string, v any) any {
	at := func() errs.Pos { return errs.Pos{File: p.file, Line: p.c.line(k, segs)} }
	switch x := v.(type) {
	case string, bool:
		return x
	case int64:
		if x > maxExact || x < -maxExact {
			p.failAt(at(), path, "integer %d is too large to keep exactly (plugin config numbers are at most 2^53); quote it as a string", x)
		}
		return float64(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			p.failAt(at(), path, "%s is not a finite number", value.String(x))
		}
		return x
	case time.Time:
		p.failAt(at(), path, "dates and times are not plugin config values; quote it as a string")
		return nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = p.canon(k, append(slices.Clip(segs), seg{index: i}), path+"["+strconv.Itoa(i)+"]", e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = p.canon(k, append(slices.Clip(segs), seg{index: i}), path+"["+strconv.Itoa(i)+"]", e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for name, e := range x {
			out[name] = p.canon(k, append(slices.Clip(segs), seg{name: name, index: -1}), path+"."+quoteKey(name), e)
		}
		return out
	}
	p.failAt(at(), path, "unsupported value of type %T", v)
	return nil
}
