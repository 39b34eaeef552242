// Package agentsettings installs awaken-lua's hooks into coding agents'
// settings files, and removes them: `awaken-lua install AGENT [--scope
// user|project|local] [--http] [--uninstall]` as a library, with one
// Install function per agent (InstallClaudeCode, InstallCodex,
// InstallCursor, InstallGemini, InstallCopilot).
//
// An install is a merge: awaken-lua's entries are added or brought up to
// date, everything else in the file (other hooks, other keys, their order
// and spelling) stays as it was; a second install changes nothing; the
// file is backed up before it changes; a file that is not valid JSON, or
// whose hooks are not shaped as the agent expects, is refused and left
// alone. See README.md in this directory.
package agentsettings

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// Scope is which settings file an install writes.
type Scope string

const (
	// User: ~/.claude/settings.json (or $CLAUDE_CONFIG_DIR/settings.json),
	// every project of the user.
	User Scope = "user"
	// Project: .claude/settings.json in the project, shared through the
	// repository.
	Project Scope = "project"
	// Local: .claude/settings.local.json in the project, this user only.
	Local Scope = "local"
)

// The defaults of Options.
const (
	DefaultCommand  = "awaken-lua hook --agent claude-code"
	DefaultURL      = "http://127.0.0.1:7878/v1/hooks/claude-code"
	DefaultTokenEnv = "AWAKEN_TOKEN"
	DefaultTimeout  = 30 // seconds
)

// MaxSettings is the largest settings file read, in bytes.
const MaxSettings = 8 << 20

// ClaudeCodeEvents are the hook events awaken-lua handles, in the order
// an install lists them.
var ClaudeCodeEvents = []string{
	"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
	"PostToolUseFailure", "PostToolBatch", "Stop", "SubagentStop", "PreCompact", "SessionEnd",
}

// toolEvents take a matcher on the tool name; the others are installed
// without one (every occurrence).
var toolEvents = map[string]bool{"PreToolUse": true, "PermissionRequest": true, "PostToolUse": true, "PostToolUseFailure": true}

// commandOnly are the events Claude Code runs no HTTP hook on.
var commandOnly = map[string]bool{"SessionStart": true}

// Options configure an install.
type Options struct {
	Scope Scope // "" means Project
	// HTTP installs HTTP hooks (except where Claude Code allows only
	// command hooks); the default is the command hook, which fails closed.
	HTTP bool
	// Uninstall removes awaken-lua's hooks (of any event) instead.
	Uninstall bool
	// ProjectDir is the project (Project and Local scopes).
	ProjectDir string
	// ConfigDir is Claude Code's user directory (User scope): the value of
	// $CLAUDE_CONFIG_DIR when set, else ~/.claude.
	ConfigDir string
	// Command is the command hook; it must start with an awaken-lua
	// executable and "hook" (DefaultCommand when empty).
	Command string
	// URL is the HTTP hook's address (DefaultURL when empty); its path
	// must end in /v1/hooks/claude-code.
	URL string
	// TokenEnv names the environment variable holding the sidecar's token,
	// sent as a bearer token by HTTP hooks (DefaultTokenEnv when empty;
	// "-" for none).
	TokenEnv string
	// Timeout is each hook's timeout in seconds (DefaultTimeout when 0).
	// The command hook must give up before it (awaken-lua hook --timeout).
	Timeout int
	// Now stamps the backup's name (time.Now when nil).
	Now func() time.Time

	// codex installs into Codex CLI's hooks.json (InstallCodex), gemini
	// into Gemini CLI's settings.json (InstallGemini).
	codex, gemini bool
}

// Result says what an install did.
type Result struct {
	// Path is the settings file.
	Path string
	// Changed reports whether the file was written; Backup is the copy of
	// the file as it was ("" when it did not exist or did not change).
	Changed bool
	Backup  string
	// Added, Updated and Removed count awaken-lua's hook entries.
	Added, Updated, Removed int
	// Deleted reports that an uninstall deleted the file: it held nothing
	// but what an install writes (no backup is kept then).
	Deleted bool
	// Warnings are things the user should know (disableAllHooks is set).
	Warnings []string
}

// ClaudeCodePath returns the settings file of a scope.
func ClaudeCodePath(o Options) (string, error) {
	switch o.Scope {
	case User:
		if o.ConfigDir == "" {
			return "", errs.New(errs.ConfigInvalid, "the user scope needs Claude Code's user directory (~/.claude or $CLAUDE_CONFIG_DIR)")
		}
		return filepath.Join(o.ConfigDir, "settings.json"), nil
	case Project, "", Local:
		if o.ProjectDir == "" {
			return "", errs.New(errs.ConfigInvalid, "the %s scope needs the project directory", scopeName(o.Scope))
		}
		name := "settings.json"
		if o.Scope == Local {
			name = "settings.local.json"
		}
		return filepath.Join(o.ProjectDir, ".claude", name), nil
	}
	return "", errs.New(errs.ConfigInvalid, "unknown scope %q; use user, project or local%s", o.Scope,
		errs.DidYouMean(string(o.Scope), []string{"user", "project", "local"}))
}

func scopeName(s Scope) string {
	if s == "" {
		return string(Project)
	}
	return string(s)
}

// InstallClaudeCode merges awaken-lua's hooks into a Claude Code settings
// file, or removes them (o.Uninstall).
func InstallClaudeCode(o Options) (Result, error) {
	o = defaults(o)
	if err := o.check(); err != nil {
		return Result{}, err
	}
	p, err := ClaudeCodePath(o)
	if o.codex {
		p, err = CodexPath(o)
	} else if o.gemini {
		p, err = GeminiPath(o)
	}
	if err != nil {
		return Result{}, err
	}
	return o.editFile(p, o.agent(), Options.merge, func(root *node, res *Result) {
		if v, _ := root.get("disableAllHooks"); v != nil && string(v.raw) == "true" {
			res.Warnings = append(res.Warnings, "disableAllHooks is true in "+p+": Claude Code runs none of its hooks")
		}
	})
}

func defaults(o Options) Options {
	if o.Scope == "" {
		o.Scope = Project
	}
	if o.Command == "" {
		o.Command = DefaultCommand
	}
	if o.URL == "" {
		o.URL = DefaultURL
	}
	if o.TokenEnv == "" {
		o.TokenEnv = DefaultTokenEnv
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (o Options) check() error {
	if !o.isOurCommand(o.Command) {
		return errs.New(errs.ConfigInvalid, "the hook command %q must run awaken-lua hook (like %q), so a later install or uninstall finds it", o.Command, DefaultCommand)
	}
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasSuffix(u.Path, "/v1/hooks/claude-code") {
		return errs.New(errs.ConfigInvalid, "the hook URL %q must be http(s)://HOST/v1/hooks/claude-code", o.URL)
	}
	if o.Timeout < 0 {
		return errs.New(errs.ConfigInvalid, "the hook timeout %d must be positive (seconds)", o.Timeout)
	}
	return nil
}

// isOurCommand reports whether a command runs awaken-lua hook: its
// executable is awaken-lua (any directory) or the one Options.Command
// names, and its first argument is hook. An install's --command must.
func (o Options) isOurCommand(cmd string) bool {
	f := words(cmd)
	if len(f) < 2 || f[1] != "hook" {
		return false
	}
	base := exeBase(f[0])
	return base == "awaken-lua" || base == "awaken-lua.exe" || base == exeBase(words(o.Command + " x")[0])
}

// installed reports whether a command hook under event is one an install
// wrote, whatever --command named it: the shape install writes, EXE hook
// ... --agent AGENT --event EVENT (the event the hook sits under), of any
// executable; or awaken-lua hook (or Options.Command's executable) naming
// an --event or an --agent, which a user's own awaken-lua hook (say
// "awaken-lua hook --local --config x.toml") does not.
func (o Options) installed(cmd, event string) bool {
	f := words(cmd)
	if len(f) < 2 || f[1] != "hook" {
		return false
	}
	agent, hasAgent := flagValue(f[2:], "agent")
	ev, hasEvent := flagValue(f[2:], "event")
	if o.isOurCommand(cmd) {
		return hasAgent || hasEvent
	}
	return hookAgents[agent] && ev == event
}

// hookAgents are the values awaken-lua hook's --agent takes.
var hookAgents = map[string]bool{"claude-code": true, "codex": true, "copilot": true, "cursor": true, "gemini": true, "gemini-cli": true}

// flagValue finds --name VALUE, --name=VALUE (or with one dash) in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name {
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// words splits a command line at blanks outside quotes, taking the
// quotes out: "/opt/my tools/awaken-lua" hook is two words.
func words(cmd string) []string {
	var out []string
	var cur strings.Builder
	in, quote, started := byte(0), false, false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote && c == in:
			quote = false
		case quote:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			in, quote, started = c, true, true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if started {
				out = append(out, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteByte(c)
			started = true
		}
	}
	if started {
		out = append(out, cur.String())
	}
	return out
}

// exeBase is an executable's file name, for either kind of separator.
func exeBase(exe string) string {
	return exe[strings.LastIndexAny(exe, `/\`)+1:]
}

// ours reports whether a hook handler under event is one awaken-lua
// installed.
func (o Options) ours(h *node, event string) bool {
	if h.kind != '{' {
		return false
	}
	typ, _ := h.get("type")
	switch t, _ := typ.text(); t {
	case "command":
		c, _ := h.get("command")
		s, ok := c.text()
		return ok && o.installed(s, event)
	case "http":
		v, _ := h.get("url")
		s, ok := v.text()
		if !ok {
			return false
		}
		u, err := url.Parse(s)
		if err != nil || !strings.HasSuffix(u.Path, "/v1/hooks/claude-code") {
			return false
		}
		// A sidecar on this machine, or the one this install names: a
		// hook of that path elsewhere (a company's own audit service,
		// say) is the user's.
		own, _ := url.Parse(cmp.Or(o.URL, DefaultURL))
		return loopback(u.Hostname()) || own != nil && strings.EqualFold(u.Host, own.Host)
	}
	return false
}

// loopback reports whether host names this machine: localhost (also
// as the absolute name "localhost."), a loopback address, or an IPv4
// loopback address in the shorthand the system's resolver reads (127.1,
// 2130706433, 0x7f.0.0.1).
func loopback(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.IsLoopback()
	}
	ip, ok := inetAton(host)
	return ok && ip.IsLoopback()
}

// inetAton reads an IPv4 address as inet_aton does: one to four parts,
// each decimal, octal (a leading 0) or hexadecimal (0x), the last filling
// the bytes the others leave.
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		v, err := strconv.ParseUint(p, 0, 32)
		if err != nil || p == "" || strings.HasPrefix(p, "+") || strings.Contains(p, "_") {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// installWrote reports whether data holds exactly what an install into
// no file writes (with these options, command or HTTP hooks): only then
// may an uninstall delete the file without a backup. A file the user
// wrote or edited (a matcher, a flag, a timeout, an empty "hooks" of
// theirs) is left as {} and backed up instead.
func (o Options) installWrote(data []byte, merge func(Options, *node, *Result) error) bool {
	old, err := parse(data)
	if err != nil {
		return false
	}
	o.Uninstall = false
	for _, http := range []bool{false, true} {
		if http && (o.codex || o.gemini) {
			break // command hooks only
		}
		o.HTTP = http
		fresh := object()
		var res Result
		if merge(o, fresh, &res) == nil && equal(old, fresh) {
			return true
		}
	}
	return false
}

// handler builds awaken-lua's hook handler for an event.
func (o Options) handler(event string) *node {
	h := object()
	if o.HTTP && !commandOnly[event] {
		h.set("type", str("http"))
		h.set("url", str(eventURL(o.URL, event)))
		if o.TokenEnv != "-" {
			headers := object()
			headers.set("Authorization", str("Bearer $"+o.TokenEnv))
			h.set("headers", headers)
			h.set("allowedEnvVars", array(str(o.TokenEnv)))
		}
	} else {
		h.set("type", str("command"))
		h.set("command", str(eventCommand(o.Command, o.agent(), event)))
	}
	h.set("timeout", number(o.Timeout))
	return h
}

// eventCommand is the command hook for one event: it names the event
// (--event), so that input the hook cannot parse, which names no event,
// is answered as that event's failure: a tool event's call is denied
// rather than let through with an empty reply; and it names the agent
// (--agent), so that with the event it has the shape a later uninstall
// knows for install's, whatever the executable is called. A command
// that names either already is kept so.
func eventCommand(cmd, agent, event string) string {
	args := words(cmd)
	if len(args) > 2 {
		args = args[2:]
	}
	if _, ok := flagValue(args, "agent"); !ok {
		cmd += " --agent " + agent
	}
	if _, ok := flagValue(args, "event"); !ok {
		cmd += " --event " + event
	}
	return cmd
}

// agent is the agent an install is for, as awaken-lua hook's --agent.
func (o Options) agent() string {
	switch {
	case o.codex:
		return "codex"
	case o.gemini:
		return "gemini"
	}
	return "claude-code"
}

// eventURL is the HTTP hook's address for one event (?event=, as
// eventCommand's --event); an address that names one already is kept.
func eventURL(raw, event string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw // check refused it already
	}
	q := u.Query()
	if q.Has("event") {
		return raw
	}
	q.Set("event", event)
	u.RawQuery = q.Encode()
	return u.String()
}

// merge installs or removes awaken-lua's handlers in the settings tree.
func (o Options) merge(root *node, res *Result) error {
	hooks, n := root.get("hooks")
	switch {
	case n > 1:
		return errors.New(`"hooks" is given twice; keep one and install again`)
	case hooks == nil:
		if o.Uninstall {
			return nil
		}
		hooks = object()
		root.set("hooks", hooks)
	case hooks.kind != '{':
		return fmt.Errorf(`"hooks" is a JSON %s, not an object of events`, kindName(hooks))
	}
	if err := checkHooks(hooks); err != nil {
		return err
	}
	if o.Uninstall {
		for i := 0; i < len(hooks.keys); i++ {
			n := o.remove(hooks.vals[i], hooks.keys[i])
			res.Removed += n
			if n > 0 && len(hooks.vals[i].elems) == 0 {
				hooks.delAt(i)
				i--
			}
		}
		if v, _ := hooks.get("enabled"); o.gemini && res.Removed > 0 && len(hooks.keys) == 1 && v != nil && string(v.raw) == "true" {
			hooks.del("enabled") // the switch install turns on, with no hook left to enable
		}
		if len(hooks.keys) == 0 && res.Removed > 0 {
			root.del("hooks")
		}
		return nil
	}
	events := ClaudeCodeEvents
	if o.codex {
		events = CodexEvents
	} else if o.gemini {
		events = GeminiEvents
		if v, _ := hooks.get("enabled"); v == nil {
			hooks.set("enabled", &node{kind: 's', raw: []byte("true")})
			res.Warnings = append(res.Warnings, `hooks.enabled is now true; Gemini CLI also needs "tools": {"enableHooks": true} in the user settings while hooks are experimental`)
		} else if string(v.raw) == "false" {
			// The user's switch, left as it is; but with it off no hook
			// runs, and nothing would be gated.
			res.Warnings = append(res.Warnings, `hooks.enabled is false: Gemini CLI runs none of its hooks, so awaken-lua decides nothing; set it to true`)
		}
	}
	for _, event := range events {
		o.install(hooks, event, res)
	}
	return nil
}

// checkHooks refuses hooks that are not shaped as Claude Code reads them,
// naming where.
func checkHooks(hooks *node) error {
	seen := map[string]bool{}
	for i, event := range hooks.keys {
		if event == "enabled" || event == "disabled" {
			continue // Gemini CLI's switches beside its events
		}
		if seen[event] {
			return fmt.Errorf("hooks.%s is given twice; keep one and install again", event)
		}
		seen[event] = true
		groups := hooks.vals[i]
		if groups.kind != '[' {
			return fmt.Errorf("hooks.%s is a JSON %s, not a list of matcher groups", event, kindName(groups))
		}
		for j, g := range groups.elems {
			if g.kind != '{' {
				return fmt.Errorf("hooks.%s[%d] is a JSON %s, not a matcher group", event, j, kindName(g))
			}
			hs, n := g.get("hooks")
			if n > 1 {
				return fmt.Errorf("hooks.%s[%d].hooks is given twice", event, j)
			}
			if hs != nil && hs.kind != '[' {
				return fmt.Errorf("hooks.%s[%d].hooks is a JSON %s, not a list of hook handlers", event, j, kindName(hs))
			}
		}
	}
	return nil
}

// remove takes awaken-lua's handlers out of an event's groups, and the
// groups they leave empty; it returns how many it removed.
func (o Options) remove(groups *node, event string) int {
	removed := 0
	var kept []*node
	for _, g := range groups.elems {
		hs, _ := g.get("hooks")
		if hs == nil {
			kept = append(kept, g)
			continue
		}
		var left []*node
		for _, h := range hs.elems {
			if !o.ours(h, event) {
				left = append(left, h)
			}
		}
		if len(left) == len(hs.elems) {
			kept = append(kept, g)
			continue
		}
		removed += len(hs.elems) - len(left)
		hs.setElems(left)
		if len(left) > 0 {
			kept = append(kept, g)
		}
	}
	if removed > 0 {
		groups.setElems(kept)
	}
	return removed
}

// install brings one event to exactly one awaken-lua handler, with the
// matcher the event takes: left as it is when it already is, updated in
// place when it is alone in a group with that matcher, else added as a
// group of its own (after taking out any other copies).
func (o Options) install(hooks *node, event string, res *Result) {
	want := o.handler(event)
	groups, _ := hooks.get(event)
	if groups == nil {
		groups = array()
		hooks.set(event, groups)
	}
	type place struct{ group, index int }
	var found []place
	for gi, g := range groups.elems {
		hs, _ := g.get("hooks")
		if hs == nil {
			continue
		}
		for hi, h := range hs.elems {
			if o.ours(h, event) {
				found = append(found, place{gi, hi})
			}
		}
	}
	if len(found) == 1 {
		g := groups.elems[found[0].group]
		if matcherOK(g, event) {
			hs, _ := g.get("hooks")
			if equal(hs.elems[found[0].index], want) {
				return
			}
			hs.elems[found[0].index] = want
			hs.dirty = true
			res.Updated++
			return
		}
	}
	if len(found) > 0 {
		o.remove(groups, event)
		res.Updated++
	} else {
		res.Added++
	}
	g := object()
	if toolEvents[event] {
		g.set("matcher", str("*"))
	}
	g.set("hooks", array(want))
	groups.setElems(append(groups.elems, g))
}

// matcherOK reports whether a group fires on every occurrence of the
// event: no matcher, "" or "*".
func matcherOK(g *node, event string) bool {
	m, _ := g.get("matcher")
	if m == nil {
		return true
	}
	s, ok := m.text()
	return ok && (s == "" || s == "*")
}

func kindName(n *node) string {
	switch n.kind {
	case '{':
		return "object"
	case '[':
		return "array"
	}
	switch n.raw[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// badJSON reports a syntax error with its line and column. A comment or
// a trailing comma is told apart from a broken file: the agent (its name
// as awaken-lua hook's --agent) may read it (Gemini CLI reads comments),
// and rewriting it would drop them, so it is refused with what to do.
func badJSON(p string, data []byte, err error, agent string, uninstall bool) error {
	line, col := 1, 1
	var se *syntaxError
	again := "install again"
	if uninstall {
		again = "uninstall again"
	}
	msg := "not valid JSON; fix it (or move it away) and " + again + ": nothing was changed"
	if errors.As(err, &se) {
		off := min(se.offset, len(data))
		before := data[:off]
		line = bytes.Count(before, []byte("\n")) + 1
		col = off - bytes.LastIndexByte(before, '\n')
		if jsonc(data, off) {
			hand := "or add (or take out) awaken-lua's hooks by hand (README.md shows them)"
			_, perr := parse(stripComments(data))
			switch {
			case agent == "gemini" && perr == nil:
				msg = "JSON with comments: Gemini CLI reads its comments, but awaken-lua cannot keep them when it rewrites the file; " +
					"nothing was changed: move the comments out (to a README beside it, say) and " + again + ", " + hand
			case agentNames[agent] != "":
				msg = "JSON with a comment or a trailing comma, and " + agentNames[agent] + " cannot read it either (it reads plain JSON" +
					map[bool]string{true: " and comments", false: ""}[agent == "gemini"] + "); nothing was changed: take them out and " + again + ", " + hand
			default:
				msg = "JSON with a comment or a trailing comma, which awaken-lua cannot keep when it rewrites the file: " +
					"nothing was changed; take them out and " + again + ", " + hand
			}
		}
	}
	e := errs.Wrap(errs.ConfigInvalid, err, "%s", msg)
	return e.At(errs.Pos{File: p, Line: line, Col: col})
}

// agentNames are the agents whose settings reader badJSON knows: Claude
// Code and Codex read plain JSON only, Gemini CLI plain JSON with
// comments (no trailing commas).
var agentNames = map[string]string{"claude-code": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI"}

// stripComments blanks out // and /* */ comments outside strings (as
// Gemini CLI's reader does), keeping every other byte where it was.
func stripComments(data []byte) []byte {
	out := bytes.Clone(data)
	inStr := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			j := bytes.Index(out[i+2:], []byte("*/"))
			end := len(out)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			for ; i < end; i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			i--
		}
	}
	return out
}

// jsonc reports whether the syntax error at off is a comment or a
// trailing comma (JSON with comments, as Gemini CLI and editors allow).
func jsonc(data []byte, off int) bool {
	if off >= len(data) {
		return false
	}
	if data[off] == '/' && off+1 < len(data) && (data[off+1] == '/' || data[off+1] == '*') {
		return true
	}
	if data[off] == '}' || data[off] == ']' {
		before := bytes.TrimRight(data[:off], " \t\r\n")
		return len(before) > 0 && before[len(before)-1] == ','
	}
	return false
}

// read reads the settings file: the path to write (a symbolic link's
// target), the bytes, the mode, and whether it exists.
func read(p string) (target string, data []byte, mode fs.FileMode, exists bool, err error) {
	mode = 0o644
	if target, err = resolve(p); err != nil {
		return "", nil, 0, false, errs.Wrap(errs.ConfigInvalid, err, "cannot read %s", p)
	}
	f, err := os.Open(target)
	if errors.Is(err, fs.ErrNotExist) {
		return target, nil, mode, false, nil
	}
	if err != nil {
		return "", nil, 0, false, errs.Wrap(errs.ConfigInvalid, err, "cannot read %s", p)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", nil, 0, false, errs.Wrap(errs.ConfigInvalid, err, "cannot read %s", p)
	}
	if !st.Mode().IsRegular() {
		return "", nil, 0, false, errs.New(errs.ConfigInvalid, "%s is not a regular file", p)
	}
	if st.Size() > MaxSettings {
		return "", nil, 0, false, errs.New(errs.ConfigInvalid, "%s is %d bytes, more than the %d a settings file may hold", p, st.Size(), MaxSettings)
	}
	data, err = readAll(f, st.Size())
	if err != nil {
		return "", nil, 0, false, errs.Wrap(errs.ConfigInvalid, err, "cannot read %s", p)
	}
	return target, data, st.Mode().Perm(), true, nil
}

// resolve follows p's symbolic links to the file they name, which need
// not exist yet: a dotfiles manager's link to a file not yet written is
// written through too, not replaced by a regular file.
func resolve(p string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			// A missing directory on the way may itself be a link.
			dir, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				return p, nil
			}
			return filepath.Join(dir, filepath.Base(p)), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return filepath.EvalSymlinks(p)
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Dir(p) + string(filepath.Separator) + link
		}
		p = physical(link)
	}
	return "", errors.New("too many symbolic links")
}

// physical is a link's target with its directory resolved as the system
// resolves it: ".." after a component that is itself a link leaves that
// link's target, which cleaning the path as text (filepath.Join) gets
// wrong ("sub/../x" is not "x" when sub is a link elsewhere).
func physical(link string) string {
	i := strings.LastIndexByte(link, filepath.Separator)
	dir, base := link[:i+1], link[i+1:]
	if base == "" || base == "." || base == ".." {
		return filepath.Clean(link) // a directory: read refuses it
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(d, base)
	}
	return filepath.Clean(link)
}

func readAll(f *os.File, size int64) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, size+1))
	_, err := buf.ReadFrom(io.LimitReader(f, MaxSettings+1))
	if buf.Len() > MaxSettings {
		return nil, fmt.Errorf("more than %d bytes", MaxSettings)
	}
	return buf.Bytes(), err
}
