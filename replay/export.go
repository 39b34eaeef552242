package replay

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// Export writes a Lua test (a *_test.lua file) that replays one recorded
// run in the test harness, with the recorded model answers and tool
// results, and asserts its decisions: each gated call's decision and
// deciding plugin, and the run's termination. Production traffic becomes a
// regression test that passes against the plugins that made the recording
// and fails against a candidate that decides otherwise. The plugins are
// configured with c's tables for the run's agent.
func Export(w io.Writer, runID string, src journal.Source, c Configs) error {
	var header *journal.Record
	var recs []*journal.Record
	problems, err := src(func(_ journal.Pos, r *journal.Record) error {
		if r.RunID != runID {
			return nil
		}
		switch r.Rec {
		case journal.KindRun:
			header, recs = r, nil
		case journal.KindPhase, journal.KindEnd:
			// Not a shadow's record: it names a phase of the run, which it
			// is not.
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if header == nil {
		return errs.New(errs.JournalInvalid, "run %s has no header in the journal (it started before the oldest record, or the id is wrong); `awaken-lua replay --json` lists the journal's runs (run_ids)", runID)
	}
	for _, p := range problems {
		if p.RunID == runID {
			// Its records from there on were left out: exported, it
			// would read as a run that has not ended, or one cut short.
			return errs.New(errs.JournalInvalid, "%s: %s; a run whose recording is not all there cannot be exported (`awaken-lua journal verify` shows where the journal is damaged)",
				p.Pos, p.Msg)
		}
	}
	var (
		start     *journal.Record
		turns     []string
		results   = map[string][]string{}
		decisions []journal.Decision
		term      string
		allowed   = map[string]bool{}
		offered   = map[string]bool{}
		called    = map[string]bool{}
	)
	for _, r := range append([]*journal.Record{header}, recs...) {
		if len(r.Omitted) > 0 {
			what := r.Phase
			if what == "" {
				what = r.Rec
			}
			return errs.New(errs.JournalInvalid, "run %s: the journal left out the %s of its %s record (too large to write whole); a run whose recording is not all there cannot be exported",
				runID, strings.Join(r.Omitted, ", "), what)
		}
	}
	for _, r := range recs {
		in := r.Input
		if in == nil {
			in = &journal.Input{}
		}
		if in.Cwd != "" {
			// The harness's run has no working directory to give hooks.
			return hostDriven(runID)
		}
		switch {
		case r.Rec == journal.KindEnd:
			term = r.Termination
		case r.Phase == journal.RunStart:
			start = r
			for _, tl := range in.Tools {
				offered[tl.Name] = true
			}
		case r.Phase == journal.BeforeInference:
			for _, tl := range in.Tools {
				offered[tl.Name] = true
			}
		case r.Phase == journal.AfterInference && in.Response != nil:
			turns = append(turns, lua(in.Response.Value(), 2))
			for _, c := range in.Response.ToolCalls {
				called[c.Name] = true
			}
		case r.Phase == journal.ToolGate && len(r.Decisions) == 1:
			d := r.Decisions[0]
			decisions = append(decisions, d)
			allowed[d.CallID] = d.Decision == gate.Allow
		case r.Phase == journal.AfterToolExecute && in.Call != nil && in.Result != nil && allowed[in.Call.ID]:
			results[in.Call.Name] = append(results[in.Call.Name], lua(in.Result.Value(), 3))
		case r.Phase == journal.Resume || r.Phase == journal.Announce || r.Phase == journal.Unbound:
			return hostDriven(runID)
		}
	}
	// A tool the model called is offered to the harness's run even when
	// no call of it ran (each was blocked or answered by the gate):
	// otherwise the harness would not offer it, and the runtime, not the
	// plugin that decided, would answer the call.
	for name := range called {
		if _, ok := results[name]; !ok && (offered[name] || len(offered) == 0) {
			results[name] = nil
		}
	}
	if term == "" {
		return errs.New(errs.JournalInvalid, "run %s has not ended in the journal; export a run that ended", runID)
	}
	if term == run.Abandoned {
		return errs.New(errs.JournalInvalid, "run %s was abandoned by its host in the middle of a step (deleted, or let go of); export a run that ended", runID)
	}
	var plugins []string
	for _, p := range header.Plugins {
		if p != "runtime" {
			plugins = append(plugins, p)
		}
	}
	cfg := map[string]any{}
	tables := map[string]any{}
	if c.Tables != nil {
		// The agent's own tables: the run's plugins were configured with
		// them, not with the project-wide ones they replace.
		tables = c.Tables(orDefault(header.Agent))
	}
	for _, p := range plugins {
		if c, ok := tables[p]; ok {
			cfg[p] = c
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "-- Exported from the journal by `awaken-lua journal export %s`: run %s\n", runID, runID)
	fmt.Fprintf(&b, "-- (thread %s, agent %s, generation %s), replayed with its recorded model\n", header.ThreadID, header.Agent, genID(header))
	b.WriteString("-- answers and tool results; it asserts the decisions the plugins made then.\n")
	if c.Hash != "" && header.ConfigHash != "" && c.Hash != header.ConfigHash {
		// The journal keeps only the hash: the tables the run ran with
		// are not there to use.
		warning := fmt.Sprintf("the configuration changed since run %s was recorded (its config_hash is %.12s, the configuration's now %.12s): "+
			"the test configures the plugins with the tables as they are now, so where those changed it asserts the recorded decisions against another configuration",
			runID, header.ConfigHash, c.Hash)
		fmt.Fprintf(&b, "-- warning: %s\n", warning)
		if c.Warn != nil {
			fmt.Fprintf(c.Warn, "warning: %s\n", warning)
		}
	}
	b.WriteString("local t = require(\"awaken.testing\")\n\n")
	b.WriteString("local results = {\n")
	for _, name := range sortedKeys(results) {
		fmt.Fprintf(&b, "  [%s] = {\n", luaString(name))
		for _, r := range results[name] {
			fmt.Fprintf(&b, "    %s,\n", r)
		}
		b.WriteString("  },\n")
	}
	b.WriteString("}\n\nlocal function tool(name)\n  local n = 0\n  return function()\n    n = n + 1\n    return results[name][n]\n  end\nend\n\n")
	fmt.Fprintf(&b, "t.test(%s, function()\n", luaString("journal run "+runID))
	fmt.Fprintf(&b, "  local h = t.harness { plugins = %s, config = %s, agent = { id = %s } }\n",
		lua(toAny(plugins), 1), lua(cfg, 1), luaString(orDefault(header.Agent)))
	b.WriteString("  local tools = {}\n  for name in pairs(results) do tools[name] = tool(name) end\n")
	var msgs any = []any{}
	if start != nil && start.Input != nil {
		msgs = model.MessagesValue(start.Input.Messages)
	}
	fmt.Fprintf(&b, "  local r = h:run {\n    messages = %s,\n    turns = {\n", lua(msgs, 2))
	for _, tn := range turns {
		fmt.Fprintf(&b, "      %s,\n", tn)
	}
	b.WriteString("    },\n    tools = tools,\n  }\n")
	b.WriteString("  local decided = {}\n  for _, ev in ipairs(r.events) do\n    if ev.event == \"gate_decision\" then decided[ev.call_id] = ev end\n  end\n")
	for _, d := range decisions {
		if d.Decision == gate.Allow && len(d.Args) == 0 {
			fmt.Fprintf(&b, "  t.eq(decided[%s], nil, %s)\n", luaString(d.CallID), luaString(d.Tool+" "+d.CallID+" was allowed"))
			continue
		}
		kind := d.Decision.String()
		if kind == "allow" {
			kind = "rewrite"
		}
		fmt.Fprintf(&b, "  t.eq(decided[%s] and { decided[%s].decision, decided[%s].plugin }, { %s, %s }, %s)\n",
			luaString(d.CallID), luaString(d.CallID), luaString(d.CallID), luaString(kind), luaString(d.Plugin),
			luaString(d.Tool+" "+d.CallID+": "+kind+" by "+d.Plugin))
	}
	fmt.Fprintf(&b, "  t.eq(r.termination, %s)\nend)\n", luaString(term))
	_, err = io.WriteString(w, b.String())
	return err
}

// Configs is the configuration an exported test configures its plugins
// with.
type Configs struct {
	// Tables are the plugins' config tables for an agent (nil: none).
	Tables func(agent string) map[string]any
	// Hash is the configuration's (config.Config.Hash): a run recorded
	// under another (its header's config_hash) is exported with a
	// warning, in the test and to Warn.
	Hash string
	Warn io.Writer
}

// hostDriven is the refusal of a run the loop did not drive, which the
// harness's h:run cannot play again.
func hostDriven(runID string) error {
	return errs.New(errs.JournalInvalid, "run %s was driven by a host one call at a time (a sidecar or an agent's hooks); export writes tests for runs the loop drove (awaken-lua run, dev); replay it with awaken-lua replay", runID)
}

func genID(h *journal.Record) string {
	if h.Generation == nil {
		return "?"
	}
	return h.Generation.ID
}

func orDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// lua writes a JSON-like value as a Lua constructor, keys sorted.
func lua(v any, indent int) string {
	switch t := v.(type) {
	case nil:
		return "nil"
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	case int:
		return strconv.Itoa(t)
	case string:
		return luaString(t)
	case []any:
		if len(t) == 0 {
			return "{}"
		}
		parts := make([]string, len(t))
		for i, x := range t {
			parts[i] = lua(x, indent+1)
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	case map[string]any:
		if len(t) == 0 {
			return "{}"
		}
		parts := make([]string, 0, len(t))
		for _, k := range sortedKeys(t) {
			parts = append(parts, "["+luaString(k)+"] = "+lua(t[k], indent+1))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	return luaString(fmt.Sprint(v))
}

// luaString quotes s for Lua: printable ASCII as is, everything else as
// decimal byte escapes, which every Lua reads.
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 32 && c < 127:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03d", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
