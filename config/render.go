package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/value"
)

// Render prints the effective configuration as TOML, every default filled
// in, for `awaken-lua check`. Parsing the text gives an equal Config (the
// fuzz test holds it to that), so it is also a way to write a config out.
// Sections come in a fixed order and keys are sorted inside plugin configs,
// so the output is stable. A null inside a Go-built plugin config cannot be
// written in TOML and is left out.
func (c *Config) Render() string {
	w := &renderer{}
	if c.File != "" {
		w.line("# effective configuration of " + oneLine(c.File) + ", every default filled in")
	} else {
		w.line("# effective configuration (defaults), every default filled in")
	}
	w.kv("plugin_dir", quoteString(c.PluginDir))

	w.header("runtime")
	w.kv("max_steps", itoa(c.Runtime.MaxSteps))
	w.kv("max_phase_rounds", itoa(c.Runtime.MaxPhaseRounds))
	w.kv("hook_timeout", quoteString(c.Runtime.HookTimeout.String()))
	forever := ""
	if c.Runtime.TicketTimeout == 0 {
		forever = "  # 0s: suspended calls wait until decided"
	}
	w.kv("ticket_timeout", quoteString(c.Runtime.TicketTimeout.String())+forever)
	w.kv("max_value_size", quoteString(c.Runtime.MaxValueSize.String()))
	w.kv("max_state_size", quoteString(c.Runtime.MaxStateSize.String()))

	note := ""
	w.header("model")
	w.kv("kind", quoteString(c.Model.Kind))
	note = ""
	if c.Model.Kind == ModelScripted && c.Model.Script == "" {
		note = "  # empty: no script; run needs one (serve, hook and dev do not)"
	}
	w.kv("script", quoteString(c.Model.Script)+note)
	w.kv("base_url", quoteString(c.Model.BaseURL))
	w.kv("model", quoteString(c.Model.Model))
	w.kv("api_key_env", quoteString(c.Model.APIKeyEnv))
	w.kv("timeout", quoteString(c.Model.Timeout.String()))
	w.kv("max_retries", itoa(c.Model.MaxRetries))

	w.header("server")
	w.kv("addr", quoteString(c.Server.Addr))
	w.kv("token_env", quoteString(c.Server.TokenEnv))
	w.kv("body_limit", quoteString(c.Server.BodyLimit.String()))
	w.kv("max_concurrent", itoa(c.Server.MaxConcurrent))
	w.kv("session_history", itoa(c.Server.SessionHistory))
	w.kv("session_history_size", quoteString(c.Server.SessionHistorySize.String()))
	w.kv("max_runs", itoa(c.Server.MaxRuns))
	if c.Agents[c.Server.HookAgent] != nil { // else hook events must name their agent (?agent=)
		w.kv("hook_agent", quoteString(c.Server.HookAgent))
	}

	w.header("store")
	w.kv("kind", quoteString(c.Store.Kind))
	if c.Store.Kind == StoreMemory { // the file and postgres stores keep every thread, and refuse max_threads
		n := c.Store.MaxThreads
		if n <= 0 { // a Config built in Go: the store applies the default
			n = defaultMaxThreads
		}
		w.kv("max_threads", itoa(n))
	}
	w.kv("path", quoteString(c.Store.Path))
	w.kv("dsn_env", quoteString(c.Store.DSNEnv))
	if c.Store.MaxConns > 0 && c.Store.Kind == StorePostgres { // the other stores refuse it
		w.kv("max_conns", itoa(c.Store.MaxConns))
	} else { // 0 does not parse: it is pgx's own default
		w.line("# max_conns: pgx's default, the larger of 4 and the number of CPUs")
	}
	if c.Store.StatementTimeout > 0 && c.Store.Kind == StorePostgres { // the other stores refuse it
		w.kv("statement_timeout", quoteString(c.Store.StatementTimeout.String()))
	} else { // 0 does not parse: the store applies its default
		w.line("# statement_timeout: the store's default, " + defaultStmtTimeout.String())
	}
	w.kv("publish", strconv.FormatBool(c.Store.Publish))

	w.header("audit")
	note = ""
	if c.Audit.Path == "" {
		note = "  # empty: no audit sink"
	}
	w.kv("path", quoteString(c.Audit.Path)+note)

	w.journal(c.Journal)
	w.shadow(c.Shadow)

	w.header("tools")
	w.kv("root", quoteString(c.Tools.Root))
	w.kv("shell", strconv.FormatBool(c.Tools.Shell))
	w.kv("shell_timeout", quoteString(c.Tools.ShellTimeout.String()))

	for _, id := range c.AgentIDs() {
		w.agent(c.Agents[id], id)
	}
	for _, id := range sortedKeys(c.Plugins) {
		path := "plugins." + quoteKey(id)
		w.header(path)
		w.table(path, asMap(c.Plugins[id]))
	}
	return w.b.String()
}

func (w *renderer) journal(j Journal) {
	w.header("journal")
	// A Go-built Config may leave these zero; the journal applies its
	// defaults then, which are the ones shown.
	kind, size, age := j.Kind, j.MaxFileSize, j.MaxAge
	if kind == "" {
		kind = JournalFile
	}
	if size <= 0 {
		size = defaultJournalSize
	}
	if age <= 0 {
		age = defaultJournalAge
	}
	w.kv("kind", quoteString(kind))
	note := ""
	switch {
	case kind == JournalPostgres:
		note = "  # unused: the journal is in the PostgreSQL store's database"
	case j.Path == "":
		note = "  # empty: no journal"
	}
	w.kv("path", quoteString(j.Path)+note)
	w.kv("max_file_size", quoteString(size.String()))
	w.kv("max_age", quoteString(age.String()))
	items := make([]string, len(j.Mask))
	for i, m := range j.Mask {
		items[i] = quoteString(m)
	}
	w.kv("mask", "["+strings.Join(items, ", ")+"]")
}

func (w *renderer) shadow(s Shadow) {
	if s.PluginDir == "" {
		// plugin_dir = "" does not parse (it is how a typo would turn the
		// shadow off), so off is a comment.
		w.line("\n[shadow]  # off: plugin_dir names a candidate serve evaluates and never enforces")
	} else {
		w.header("shadow")
		w.kv("plugin_dir", quoteString(s.PluginDir))
	}
	note := ""
	if s.Config == "" {
		note = "  # empty: the candidate reads this file"
	}
	w.kv("config", quoteString(s.Config)+note)
}

func (w *renderer) agent(a *Agent, id string) {
	if a == nil {
		a = &Agent{}
	}
	path := "agents." + quoteKey(id)
	w.header(path)
	w.kv("system_prompt", quoteText(a.SystemPrompt))
	if len(a.PluginConfigs) == 0 {
		items := make([]string, len(a.Plugins))
		for i, p := range a.Plugins {
			items[i] = quoteString(p)
		}
		note := ""
		if len(items) == 0 {
			note = "  # empty: every plugin is active"
		}
		w.kv("plugins", "["+strings.Join(items, ", ")+"]"+note)
	}
	items := make([]string, len(a.Tools))
	for i, t := range a.Tools {
		items[i] = quoteString(t)
	}
	w.kv("tools", "["+strings.Join(items, ", ")+"]")
	note := ""
	if a.MaxSteps == 0 {
		note = "  # 0: runtime.max_steps"
	}
	w.kv("max_steps", itoa(a.MaxSteps)+note)
	w.kv("max_continues", itoa(a.MaxContinues))
	w.kv("model", quoteString(a.Model))
	if a.Temperature != nil {
		w.kv("temperature", formatNumber(*a.Temperature))
	}
	if len(a.PluginConfigs) == 0 {
		return
	}
	// The table form: plugins active with their plugin-wide config are set to
	// true, the others get their own table.
	var plain []string
	for _, p := range a.Plugins {
		if _, ok := a.PluginConfigs[p]; !ok {
			plain = append(plain, p)
		}
	}
	if len(plain) > 0 {
		w.header(path + ".plugins")
		slices.Sort(plain)
		for _, p := range plain {
			w.kv(quoteKey(p), "true")
		}
	}
	for _, p := range sortedKeys(a.PluginConfigs) {
		sub := path + ".plugins." + quoteKey(p)
		w.header(sub)
		w.table(sub, asMap(a.PluginConfigs[p]))
	}
}

type renderer struct{ b strings.Builder }

func (w *renderer) line(s string) { w.b.WriteString(s); w.b.WriteByte('\n') }

func (w *renderer) header(path string) { w.line("\n[" + path + "]") }

func (w *renderer) kv(k, v string) { w.line(k + " = " + v) }

// table writes a plugin config table below its header: plain values first,
// then sub-tables and arrays of tables, the way TOML requires.
func (w *renderer) table(path string, m map[string]any) {
	keys := sortedKeys(m)
	for _, k := range keys {
		switch x := m[k].(type) {
		case nil, value.Null:
		case map[string]any:
		case []any:
			if !tableArray(x) {
				w.kv(quoteKey(k), inline(x))
			}
		case string:
			w.kv(quoteKey(k), quoteText(x))
		default:
			w.kv(quoteKey(k), inline(x))
		}
	}
	for _, k := range keys {
		sub := path + "." + quoteKey(k)
		switch x := m[k].(type) {
		case map[string]any:
			w.header(sub)
			w.table(sub, x)
		case []any:
			if tableArray(x) {
				for _, e := range x {
					w.line("\n[[" + sub + "]]")
					w.table(sub, e.(map[string]any))
				}
			}
		}
	}
}

// tableArray reports a list written as [[path]] tables: a non-empty list of
// tables only. Any other list is written inline.
func tableArray(l []any) bool {
	if len(l) == 0 {
		return false
	}
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// inline renders a value on one line.
func inline(v any) string {
	switch x := v.(type) {
	case nil, value.Null:
		return `""` // unreachable from Parse: TOML has no null
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return formatNumber(x)
	case string:
		return quoteString(x)
	case []any:
		items := make([]string, len(x))
		for i, e := range x {
			items[i] = inline(e)
		}
		return "[" + strings.Join(items, ", ") + "]"
	case map[string]any:
		var items []string
		for _, k := range sortedKeys(x) {
			if x[k] != nil {
				items = append(items, quoteKey(k)+" = "+inline(x[k]))
			}
		}
		if len(items) == 0 {
			return "{}"
		}
		return "{ " + strings.Join(items, ", ") + " }"
	}
	// Only a Go-built Config gets here (ints, typed slices): write the
	// canonical form.
	if n, err := value.Normalize(v); err == nil {
		switch n.(type) {
		case bool, float64, string, []any, map[string]any:
			return inline(n)
		}
	}
	return quoteString(fmt.Sprint(v))
}

// formatNumber writes integers as TOML integers, which read back as the same
// float64, as long as they are exact (|f| <= 2^53); anything else is a TOML
// float, in exponent form when it is integral so it is not read as an
// integer.
func formatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == math.Trunc(f) && math.Abs(f) <= maxExact:
		return strconv.FormatInt(int64(f), 10)
	case f == math.Trunc(f):
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func itoa(n int) string { return strconv.Itoa(n) }

// quoteKey writes a key bare when TOML allows it, else as a quoted string.
func quoteKey(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return quoteString(k)
		}
	}
	return k
}

// quoteString writes a TOML basic string; control characters are escaped,
// since TOML forbids them raw.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	escape(&b, s, false)
	b.WriteByte('"')
	return b.String()
}

// quoteText is quoteString, except that text with newlines (a system prompt)
// becomes a multi-line string, which reads as it will be sent.
func quoteText(s string) string {
	if !strings.Contains(s, "\n") {
		return quoteString(s)
	}
	var b strings.Builder
	b.WriteString("\"\"\"\n") // TOML drops a newline right after the opening quotes
	escape(&b, s, true)
	b.WriteString(`"""`)
	return b.String()
}

// escape writes s for a basic string. In a multi-line one a quote is
// escaped only before another quote or at the end, which is enough to keep
// """ from closing the string early.
func escape(b *strings.Builder, s string, multiline bool) {
	for i, r := range s {
		switch r {
		case '"':
			if multiline && i+1 < len(s) && s[i+1] != '"' {
				b.WriteByte('"')
			} else {
				b.WriteString(`\"`)
			}
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			if multiline {
				b.WriteByte('\n')
			} else {
				b.WriteString(`\n`)
			}
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
}

// oneLine keeps a file name from breaking the comment it is shown in.
func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// asMap reads a plugin config table; anything else (only from a Go-built
// Config) renders as an empty table.
func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
