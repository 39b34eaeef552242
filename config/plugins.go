package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// PluginConfigs returns the config of every plugin in set that declares a
// config schema, for the given agent, keyed by plugin id: the agent's own
// [agents.<agent>.plugins.<id>] table if it has one, else the plugin-wide
// [plugins.<id>], else an empty table; conformed to the schema (defaults
// filled in), then checked by the plugin's ValidateConfig. Configs are
// given for every plugin, active for the agent or not, because structural
// parts (action and effect handlers) run for inactive plugins too.
//
// It also refuses what can only be judged once plugins are loaded: a config
// or filter entry naming a plugin that is not in set (with "did you mean"),
// and a non-empty table for a plugin that declares no config. So call it
// before set.Activate, whose error has no line.
//
// Every problem is reported (an errs.List sorted by position), each naming
// the file, the line as precisely as known, and the dotted key:
// `awaken.toml:9: config_invalid: plugins.permission.rules[2].tool:
// expected string, got number`. A validator's own error code (such as
// hook_failed from a Lua validator that raised) is kept.
func (c *Config) PluginConfigs(set *plugin.Set, agent string) (map[string]any, error) {
	a := c.Agents[agent]
	if a == nil {
		ids := c.AgentIDs()
		return nil, errs.New(errs.ConfigInvalid, "there is no agent %q%s; the agents are %s",
			agent, errs.DidYouMean(agent, ids), strings.Join(ids, ", ")).At(errs.Pos{File: c.File})
	}
	var infos []plugin.Info
	if set != nil {
		infos = set.Plugins()
	}
	loaded := make([]string, len(infos))
	for i, in := range infos {
		loaded[i] = in.ID
	}

	var list errs.List
	agentKey := toml.Key{"agents", agent, "plugins"}
	ids := slices.Clone(a.Plugins)
	for _, id := range sortedKeys(a.PluginConfigs) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		if slices.Contains(loaded, id) {
			continue
		}
		k := key(agentKey, id) // the table form
		if c.idx.Line(k.String(), 0) == 0 {
			k = agentKey // the list form
		}
		list.Add(c.errorAt(c.pos(k), k.String(), "no plugin %q is loaded%s; loaded plugins: %s",
			id, errs.DidYouMean(id, loaded), strings.Join(loaded, ", ")))
	}
	for _, id := range sortedKeys(c.Plugins) {
		if !slices.Contains(loaded, id) {
			k := toml.Key{"plugins", id}
			list.Add(c.errorAt(c.pos(k), k.String(), "no plugin %q is loaded%s; loaded plugins: %s",
				id, errs.DidYouMean(id, loaded), strings.Join(loaded, ", ")))
		}
	}

	out := make(map[string]any, len(infos))
	for _, in := range infos {
		k, table, given := c.configTable(a, in.ID)
		if in.Config == nil {
			if given && len(table) > 0 {
				list.Add(c.errorAt(c.pos(k), k.String(),
					"plugin %q declares no config, so this table would be ignored; remove it (or declare config in the plugin)", in.ID))
			}
			continue
		}
		if table == nil {
			table = map[string]any{}
		}
		// A private copy: the caller may keep or change the result, and the
		// Config must stay as parsed.
		conf, err := in.Config.Conform(value.Clone(table))
		if err != nil {
			list.Add(c.schemaError(k, given, err))
			continue
		}
		if in.ValidateConfig != nil {
			var vl errs.List
			vl.Add(validate(in, value.Clone(conf)))
			for _, e := range vl {
				list.Add(c.validatorError(k, e))
			}
			if len(vl) > 0 {
				continue
			}
		}
		out[in.ID] = conf
	}
	list.Sort()
	if err := list.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckPlugins runs PluginConfigs for every agent and reports each problem
// once: a fault in a plugin-wide table would otherwise repeat for every
// agent that uses it. `awaken-lua check` uses it.
func (c *Config) CheckPlugins(set *plugin.Set) error {
	var list errs.List
	seen := map[string]bool{}
	for _, id := range c.AgentIDs() {
		_, err := c.PluginConfigs(set, id)
		var l errs.List
		l.Add(err)
		for _, e := range l {
			if s := e.Error(); !seen[s] {
				seen[s] = true
				list = append(list, e)
			}
		}
	}
	list.Sort()
	return list.Err()
}

// PluginTables are the plugins' config tables as written, for an agent:
// its own [agents.<id>.plugins.<plugin>] where it has one, which replaces
// [plugins.<plugin>] for it, else the project-wide table.
func (c *Config) PluginTables(agent string) map[string]any {
	out := make(map[string]any, len(c.Plugins))
	for id, t := range c.Plugins {
		out[id] = t
	}
	if a := c.Agents[agent]; a != nil {
		for id, t := range a.PluginConfigs {
			out[id] = t
		}
	}
	return out
}

// configTable picks the table a plugin's config starts from for an agent,
// and the key it was written under (where a table would go if not given).
func (c *Config) configTable(a *Agent, id string) (k toml.Key, table map[string]any, given bool) {
	if t, ok := a.PluginConfigs[id]; ok {
		m, _ := t.(map[string]any)
		return toml.Key{"agents", a.ID, "plugins", id}, m, true
	}
	if t, ok := c.Plugins[id]; ok {
		m, _ := t.(map[string]any)
		return toml.Key{"plugins", id}, m, true
	}
	return toml.Key{"plugins", id}, nil, false
}

// validate calls the plugin's ValidateConfig, turning a panic into an
// error: one broken validator must not take the whole check down.
func validate(in plugin.Info, conf any) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = errs.New(errs.ConfigInvalid, "the config validator of plugin %q panicked: %v", in.ID, v)
		}
	}()
	return in.ValidateConfig(conf)
}

func (c *Config) pos(k toml.Key) errs.Pos {
	return errs.Pos{File: c.File, Line: c.idx.Line(k.String(), 0)}
}

func (c *Config) errorAt(pos errs.Pos, name, format string, args ...any) *errs.Error {
	return &errs.Error{Code: errs.ConfigInvalid, Pos: pos, Key: name, Msg: name + ": " + fmt.Sprintf(format, args...)}
}

// schemaError turns a schema violation ("$.rules[2].tool: expected string,
// got number") into config_invalid at the key the user wrote
// ("plugins.permission.rules[2].tool") and its line.
func (c *Config) schemaError(k toml.Key, given bool, err error) *errs.Error {
	var e *errs.Error
	if !errors.As(err, &e) {
		return c.errorAt(c.pos(k), k.String(), "%v", err)
	}
	suffix, segs, msg, ok := splitPath(e.Msg)
	if !ok {
		return c.errorAt(c.pos(k), k.String(), "%s", e.Msg)
	}
	name := k.String() + suffix
	if !given {
		return c.errorAt(errs.Pos{File: c.File}, name, "%s; add a [%s] table to set it", msg, k.String())
	}
	return c.errorAt(errs.Pos{File: c.File, Line: c.line(k, segs)}, name, "%s", msg)
}

// validatorError places a problem a plugin's validator found: at its own
// position if it has one (a Lua validator that raised), else at the table.
func (c *Config) validatorError(k toml.Key, e *errs.Error) *errs.Error {
	out := *e
	if out.Code == "" {
		out.Code = errs.ConfigInvalid
	}
	if out.Code == errs.ConfigInvalid {
		out.Plugin, out.Phase = "", "" // the key path names the plugin
	}
	if !out.Pos.IsValid() {
		out.Pos = c.pos(k)
		if out.Pos.Line == 0 {
			out.Pos = errs.Pos{File: c.File}
		}
	}
	out.Key = k.String()
	out.Msg = k.String() + ": " + e.Msg
	return &out
}

// seg is one step of a schema path: a property name or a list index.
type seg struct {
	name  string
	index int // >= 0: a list index
}

// splitPath splits a schema message "$<path>: <what>" into the path without
// the "$", its steps and the rest. Quoted names (["a: b"]) are read as Go
// strings, so a colon inside one does not end the path.
func splitPath(msg string) (suffix string, segs []seg, rest string, ok bool) {
	if !strings.HasPrefix(msg, "$") {
		return "", nil, "", false
	}
	i := 1
	for i < len(msg) {
		switch msg[i] {
		case '.':
			j := i + 1
			for j < len(msg) && isIdentByte(msg[j]) {
				j++
			}
			if j == i+1 {
				return "", nil, "", false
			}
			segs = append(segs, seg{name: msg[i+1 : j], index: -1})
			i = j
		case '[':
			if i+1 < len(msg) && msg[i+1] == '"' {
				q, err := strconv.QuotedPrefix(msg[i+1:])
				if err != nil {
					return "", nil, "", false
				}
				name, _ := strconv.Unquote(q)
				j := i + 1 + len(q)
				if j >= len(msg) || msg[j] != ']' {
					return "", nil, "", false
				}
				segs = append(segs, seg{name: name, index: -1})
				i = j + 1
				continue
			}
			j := i + 1
			for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
				j++
			}
			n, err := strconv.Atoi(msg[i+1 : j])
			if err != nil || j >= len(msg) || msg[j] != ']' {
				return "", nil, "", false
			}
			segs = append(segs, seg{index: n})
			i = j + 1
		case ':':
			if strings.HasPrefix(msg[i:], ": ") {
				return msg[1:i], segs, msg[i+2:], true
			}
			return "", nil, "", false
		default:
			return "", nil, "", false
		}
	}
	return "", nil, "", false
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// line finds the line of the value at segs inside the table at k: the
// deepest step the index knows. Each step narrows the range of lines to
// search, so rules[2].tool is looked for between the starts of the third
// and the fourth rule, whether rules are [[tables]] or inline.
func (c *Config) line(k toml.Key, segs []seg) int {
	best := c.idx.Line(k.String(), 0)
	lo, hi := best, math.MaxInt
	cur := slices.Clone(k)
	for _, s := range segs {
		if s.index < 0 {
			cur = append(cur, s.name)
			l := 0
			for _, x := range c.idx.Lines(cur.String()) {
				if x >= lo && x < hi {
					l = x
					break
				}
			}
			if l == 0 {
				break
			}
			best, lo = l, l
			continue
		}
		var elems []int
		for _, x := range c.idx.ElemLines(cur.String()) {
			if x >= lo && x < hi {
				elems = append(elems, x)
			}
		}
		if s.index >= len(elems) {
			break
		}
		best, lo = elems[s.index], elems[s.index]
		if s.index+1 < len(elems) {
			hi = max(elems[s.index+1], lo+1)
		}
	}
	return best
}
