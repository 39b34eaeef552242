package toolrules

import (
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/awaken-lua/awaken-lua/shell"
)

// MaxPath is the longest file path matched against path rules; a longer
// one matches deny and ask rules and no allow rule.
const MaxPath = 4096

// Call is one tool call to match rules against.
type Call struct {
	// Tool is the tool's name and Input its arguments, as the agent sends
	// them (Claude Code's tool_name and tool_input).
	Tool  string
	Input map[string]any
	// WorkDir is the agent's working directory: it anchors ./x and bare
	// path patterns (./.env, src/**, .env) and relative paths in Input, as
	// Claude Code anchors them at its current directory. ProjectDir anchors
	// /x patterns (/src/**), which Claude Code anchors at the directory of
	// the settings file (the project root for project settings). Each
	// stands in for the other when empty, but for a deny or ask /x
	// pattern the working directory stands in with every directory above
	// it (the project root is one of them); with neither, such patterns
	// cannot be judged. HomeDir anchors ~/ patterns. Each must be an
	// absolute path; a relative one counts as unset.
	WorkDir, ProjectDir, HomeDir string
	// Tools says how rules see each tool; nil means the built-in table.
	Tools Tools
	// Stop, when set, is asked between rules and between the simple
	// commands of a shell command: once it reports true, matching fails
	// closed and ends soon (a rule matches as a deny or ask rule, never as
	// an allow rule, and Decide denies). Hosts set it to their deadline.
	Stop func() bool
}

// Match reports whether the rule, sitting in the b list, matches the call.
// For a shell command a deny or ask rule matches when any simple command
// matches, an allow rule when every one does; an allow rule never matches
// a command that writes to a file (other than /dev/null) through a
// redirection, which only Policy can clear against Edit rules.
func (r Rule) Match(b Behavior, c Call) bool {
	return NewMatcher(c).Match(&r, b)
}

// Matcher matches rules against one call and splits its shell command
// once for all of them. Not safe for concurrent use.
type Matcher struct{ m matcher }

// NewMatcher returns a Matcher for the call.
func NewMatcher(c Call) *Matcher {
	m := newMatcher(Deny, c)
	m.split = map[string]splitResult{}
	return &Matcher{m: *m}
}

// Match is r.Match(b, call).
func (m *Matcher) Match(r *Rule, b Behavior) bool {
	mb := m.m.as(b)
	ok := mb.rule(r, false)
	if mb.stopped() {
		return b != Allow
	}
	return ok
}

// MatchArgument matches the rule's specifier against the primary argument
// of the call's own tool, whatever tool the rule names: Tool(x) read as if
// Tool were the call's tool, with no family (an Edit specifier does not
// cover Write here). known is false, and matched too, when the table has
// no entry for the call's tool. A rule without a specifier matches.
func (m *Matcher) MatchArgument(r *Rule, b Behavior) (matched, known bool) {
	t, ok := m.m.tools[m.m.c.Tool]
	if !ok {
		return false, false
	}
	if !r.HasSpecifier {
		return true, true
	}
	v := view{arg: t.Arg, kind: t.Kind, known: true, params: t.Params}
	mb := m.m.as(b)
	ok = mb.spec(r, v, false)
	if mb.stopped() {
		return b != Allow, true
	}
	return ok, true
}

// Decide is p.Decide(call), sharing the split command with the other
// matches of this Matcher.
func (m *Matcher) Decide(p *Policy) Decision {
	return p.decide(&m.m)
}

// matcher matches rules of one behavior against one call, splitting its
// shell command once.
type matcher struct {
	b     Behavior
	c     Call
	tools Tools
	split map[string]splitResult
}

type splitResult struct {
	cmds  []shell.Command
	forms []forms
	err   error
}

// forms are the strings rules match a command by, worked out once a call.
type forms struct {
	line  string // shell.Command.Line
	join  string // the argv joined by spaces
	text  string // the source, trimmed
	allow string // the line with the leading assignments
	known string // the line of the words before the first non-literal one, and a space
	// alias is the command as deny and ask rules also name it (aliasOf),
	// with its forms; nil when it is the command itself.
	alias      *shell.Command
	aliasForms *forms
}

func formsOf(c *shell.Command) forms {
	f := forms{line: c.Line(), join: strings.Join(c.Argv, " "), text: strings.TrimSpace(c.Text)}
	f.allow = f.line
	if len(c.Env) > 0 {
		f.allow = strings.TrimSuffix(strings.Join(c.Env, " ")+" "+f.line, " ")
	}
	if c.Dynamic {
		lit := shell.Command{Words: c.Words[:slices.IndexFunc(c.Words, func(w shell.Word) bool { return !w.Literal })]}
		f.known = lit.Line() + " "
	}
	if a, ok := aliasOf(c); ok {
		af := formsOf(&a)
		f.alias, f.aliasForms = &a, &af
	}
	return f
}

// aliasOf returns the command as a deny or ask rule's author would name
// it, when that differs from how it is written: a program by its bare
// name (/bin/rm -rf / is rm -rf /, which Bash(rm *) denies), and git past
// the global options before its subcommand (git -C dir push is git push,
// which Bash(git push *) asks for). Allow rules never match it: they name
// the command exactly.
func aliasOf(c *shell.Command) (shell.Command, bool) {
	if len(c.Words) == 0 || !c.Words[0].Literal {
		return shell.Command{}, false
	}
	words := c.Words
	changed := false
	if name := words[0].Value; strings.Contains(name, "/") {
		if base := path.Base(name); base != "." && base != "/" && base != name {
			words = append([]shell.Word{{Value: base, Source: base, Literal: true}}, words[1:]...)
			changed = true
		}
	}
	if words[0].Value == "git" {
		if i := gitSubcommand(words); i > 1 {
			words = append([]shell.Word{words[0]}, words[i:]...)
			changed = true
		}
	}
	if !changed {
		return shell.Command{}, false
	}
	a := shell.Command{Words: words, Argv: make([]string, len(words)), Parent: c.Parent, Via: c.Via}
	for i, w := range words {
		a.Argv[i] = w.Value
		a.Dynamic = a.Dynamic || !w.Literal
	}
	a.Text = a.Line()
	return a, true
}

// gitValued are git's global options that take the next word as their
// value when not written --opt=value.
var gitValued = map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true,
	"--namespace": true, "--super-prefix": true, "--config-env": true, "--attr-source": true}

// gitSubcommand returns the index of git's subcommand: the first word
// after the global options (-C DIR, -c K=V, --git-dir=X, --no-pager...).
// A word not known stops it, as it may be the subcommand.
func gitSubcommand(words []shell.Word) int {
	i := 1
	for i < len(words) {
		w := words[i]
		if !w.Literal || !strings.HasPrefix(w.Value, "-") || w.Value == "-" {
			break
		}
		if w.Value == "--" {
			i++
			break
		}
		i++
		if gitValued[w.Value] {
			i++ // the value, known or not
		}
	}
	return min(i, len(words))
}

func newMatcher(b Behavior, c Call) *matcher {
	tools := c.Tools
	if tools == nil {
		tools = defaultTools
	}
	// Only an absolute directory anchors anything: a relative one (or a
	// Windows path) would anchor a rule at whatever it is taken against,
	// so it counts as unknown, and such rules cannot be judged.
	for _, d := range []*string{&c.WorkDir, &c.ProjectDir, &c.HomeDir} {
		if !path.IsAbs(*d) {
			*d = ""
		}
	}
	return &matcher{b: b, c: c, tools: tools}
}

// stopped reports whether the call's Stop asks to end now.
func (m *matcher) stopped() bool { return m.c.Stop != nil && m.c.Stop() }

// as returns a matcher for another behavior that shares the split cache.
func (m *matcher) as(b Behavior) *matcher {
	c := *m
	c.b = b
	return &c
}

func (m *matcher) shell(s string) (splitResult, error) {
	if r, ok := m.split[s]; ok {
		return r, r.err
	}
	r := splitResult{}
	r.cmds, r.err = shell.Split(s)
	r.forms = make([]forms, len(r.cmds))
	for i := range r.cmds {
		r.forms[i] = formsOf(&r.cmds[i])
	}
	if m.split == nil {
		m.split = map[string]splitResult{}
	}
	m.split[s] = r
	return r, r.err
}

// view is one way a rule name covers the call's tool: the argument it
// matches and how.
type view struct {
	arg, deflt string
	kind       Kind
	known      bool // the tool is in the table
	params     []string
}

// views returns how a rule named name covers the call's tool.
func (m *matcher) views(r *Rule) []view {
	t, known := m.tools[m.c.Tool]
	var vs []view
	if r.Tool == m.c.Tool {
		vs = append(vs, view{arg: t.Arg, kind: t.Kind, known: known, params: t.Params})
	}
	if !known {
		return vs
	}
	family := func(arg string) view {
		v := view{arg: arg, kind: t.Kind, known: true}
		if ft, ok := m.tools[r.Tool]; ok && t.Kind != Patch {
			v.kind = ft.Kind // a patch is read as its paths under any rule
		}
		return v
	}
	if t.Family != "" && t.Family == r.Tool {
		arg := t.FamilyArg
		if arg == "" {
			arg = t.Arg
		}
		v := family(arg)
		v.deflt = t.FamilyDefault
		vs = append(vs, v)
	}
	if r.HasSpecifier && m.b != Allow && t.DenyFamily == r.Tool {
		vs = append(vs, family(t.Arg))
	}
	if r.HasSpecifier && m.b == Allow && t.AllowFamily == r.Tool {
		vs = append(vs, family(t.Arg))
	}
	return vs
}

// rule matches one rule. writes says whether an allow rule may match a
// command that writes to files (Policy checks those against Edit rules).
func (m *matcher) rule(r *Rule, writes bool) bool {
	switch {
	case r.nameGlob:
		return !r.HasSpecifier && m.nameGlob(r.Tool)
	case r.server:
		if !strings.HasPrefix(m.c.Tool, r.Tool+"__") {
			return false
		}
		return !r.HasSpecifier || m.spec(r, view{}, writes)
	}
	for _, v := range m.views(r) {
		if !r.HasSpecifier || m.spec(r, v, writes) {
			return true
		}
	}
	return false
}

// nameGlob matches a tool-name glob. Allow rules take one only after a
// literal mcp__server__ prefix; Claude Code skips any other.
func (m *matcher) nameGlob(pattern string) bool {
	if m.b == Allow {
		rest, ok := strings.CutPrefix(pattern, "mcp__")
		server, _, found := strings.Cut(rest, "__")
		if !ok || !found || server == "" || strings.Contains(server, "*") {
			return false
		}
	}
	return compileStar(pattern).match(m.c.Tool)
}

// spec matches the rule's specifier through one view. What cannot be
// judged (an unknown tool, a missing or non-string argument, a command
// that does not parse) matches deny and ask rules and no allow rule.
func (m *matcher) spec(r *Rule, v view, writes bool) bool {
	unsure := m.b != Allow
	if v.kind == Command && r.cmd.all {
		return true
	}
	if r.param != "" && (!v.known || slices.Contains(v.params, r.param)) &&
		!(v.kind == Command && strings.HasSuffix(strings.TrimSpace(r.Specifier), ":*")) {
		// On a tool the table does not know, param:value may as well be
		// a value with a colon (https://x): without that field the rule
		// cannot be judged.
		if _, set := m.c.Input[r.param]; !v.known && !set {
			return unsure
		}
		return m.param(r)
	}
	if !v.known {
		return unsure
	}
	raw, ok := m.c.Input[v.arg]
	if !ok && v.deflt != "" {
		raw, ok = v.deflt, true
	}
	s, isString := raw.(string)
	if !ok || !isString {
		return unsure
	}
	switch v.kind {
	case Command:
		return m.command(r, s, writes)
	case Path:
		return m.path(r, s)
	case Patch:
		return m.patch(r, s)
	case URL:
		if r.isDomain {
			matched, parsed := matchDomain(r.domain, s)
			if !parsed {
				return unsure
			}
			return matched
		}
	}
	return compileStar(strings.TrimSpace(r.Specifier)).match(s)
}

// param matches Tool(param:value): deny and ask rules only, on a scalar
// field the call sets.
func (m *matcher) param(r *Rule) bool {
	if m.b == Allow {
		return false
	}
	raw, ok := m.c.Input[r.param]
	if !ok {
		return false
	}
	var s string
	switch x := raw.(type) {
	case string:
		s = x
	case bool, float64, int, int64, json.Number:
		b, _ := json.Marshal(x)
		s = string(b)
	default:
		return false
	}
	return compileStar(r.value).match(s)
}

// path matches a file-tool path.
func (m *matcher) path(r *Rule, p string) bool {
	unsure := m.b != Allow
	if r.path == nil || len(p) > MaxPath {
		return unsure
	}
	abs, ok := m.resolve(p)
	if !ok {
		return unsure
	}
	var dir string
	switch r.path.anchor {
	case anchorRoot:
		dir = "/"
	case anchorHome:
		dir = m.c.HomeDir
	case anchorWork:
		dir = m.workDir()
	case anchorProject:
		dir = m.c.ProjectDir
		if dir == "" && m.c.WorkDir != "" {
			if unsure {
				return m.aboveWork(r, abs)
			}
			dir = m.c.WorkDir
		}
	}
	if dir == "" {
		return unsure
	}
	return r.path.match(abs, path.Clean(dir), m.b != Allow)
}

// patch matches the files a patch touches: a deny or ask rule when any of
// them matches, an allow rule when every one does. A patch that names
// none cannot be judged.
func (m *matcher) patch(r *Rule, s string) bool {
	paths := patchPaths(s)
	if len(paths) == 0 {
		return m.b != Allow
	}
	for _, p := range paths {
		if p == "" || m.stopped() {
			return m.b != Allow
		}
		if m.path(r, p) != (m.b == Allow) {
			return m.b != Allow
		}
	}
	return m.b == Allow
}

// patchOps are the lines of Codex's patch format that name a file.
var patchOps = []string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"}

// patchPaths are the files a patch adds, updates, deletes or moves to. A
// line is read past leading white space, so a context line that looks
// like an operation only adds a path to judge.
func patchPaths(s string) []string {
	var out []string
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		for _, op := range patchOps {
			if p, ok := strings.CutPrefix(line, op); ok {
				out = append(out, strings.TrimSpace(p))
			}
		}
	}
	return out
}

// aboveWork matches a deny or ask /x pattern when only the working
// directory is known. Claude Code anchors /x at the project root, which is
// the working directory only until the agent changes directory (a cd in a
// Bash call persists); while it stays in the project, the root is the
// working directory or a directory above it. Anchored at the working
// directory alone, a deny rule such as Edit(/.git/**) would stop applying
// once the agent is in a subdirectory, so it is tried at each of them: a
// deny or ask rule may only be stricter than Claude Code's.
func (m *matcher) aboveWork(r *Rule, abs string) bool {
	for d := path.Clean(m.c.WorkDir); ; d = path.Dir(d) {
		// A pattern anchored at d matches only what is under d.
		if (d == "/" || abs == d || strings.HasPrefix(abs, d+"/")) && r.path.match(abs, d, true) {
			return true
		}
		if m.stopped() {
			return true // not judged: deny and ask rules match
		}
		if up := path.Dir(d); up == d {
			return false
		}
	}
}

// workDir anchors ./x, bare names and relative input paths: the working
// directory, else the project.
func (m *matcher) workDir() string {
	if m.c.WorkDir != "" {
		return m.c.WorkDir
	}
	return m.c.ProjectDir
}

// resolve makes a path absolute and clean: relative to the working
// directory, ~/ to the home directory.
func (m *matcher) resolve(p string) (string, bool) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if m.c.HomeDir == "" {
			return "", false
		}
		p = path.Join(m.c.HomeDir, p[1:])
	case !path.IsAbs(p):
		dir := m.workDir()
		if dir == "" {
			return "", false
		}
		p = path.Join(dir, p)
	}
	return path.Clean(p), true
}

// command matches a shell command line.
func (m *matcher) command(r *Rule, s string, writes bool) bool {
	sr, err := m.shell(s)
	if err != nil {
		return m.b != Allow
	}
	if m.b != Allow {
		for i := range sr.cmds {
			if m.stopped() || denies(r.cmd, &sr.cmds[i], &sr.forms[i]) {
				return true
			}
		}
		return false
	}
	return allowed(sr.cmds, func(i int) bool {
		return !m.stopped() && (writes || onlyNull(sr.cmds[i].Writes)) && allows(r.cmd, &sr.cmds[i], &sr.forms[i])
	})
}

// denies reports whether a command may be one the pattern names: its line,
// its words joined as they are, its text as written, or, when a word is
// not known before it runs, any command that starts with its known words.
func denies(p command, c *shell.Command, f *forms) bool {
	if c.Unknown() {
		return true
	}
	if p.match(f.line) || p.match(f.join) || p.match(f.text) {
		return true
	}
	if f.alias != nil && denies(p, f.alias, f.aliasForms) {
		return true
	}
	if !c.Dynamic {
		return false
	}
	if onlyOne(c) {
		return p.fills(c)
	}
	return p.viable(f.known)
}

// onlyOne reports whether every word of c not known before it runs is one
// that find -exec or xargs -I fills in: one argument each.
func onlyOne(c *shell.Command) bool {
	for _, w := range c.Words {
		if !w.Literal && !w.One {
			return false
		}
	}
	return true
}

// allows reports whether the pattern names the command exactly as it runs:
// its line (non-literal words as written), with its leading assignments
// when it has any (Claude Code matches past only a few known-safe
// variables; this never does).
func allows(p command, c *shell.Command, f *forms) bool {
	if c.Unknown() || len(c.Words) == 0 && len(c.Env) == 0 {
		return false
	}
	return p.match(f.allow)
}

// onlyNull reports whether every redirection writes to /dev/null.
func onlyNull(ws []shell.Word) bool {
	for _, w := range ws {
		if !w.Literal || w.Value != "/dev/null" {
			return false
		}
	}
	return true
}

// allowed decides a command line for allow rules, given which commands
// they match. Every top command must be allowed. A command is allowed when
// it matches, or when a transparent wrapper's command does (timeout 5 npm
// test), or when it is a shell or eval whose script is judged instead
// (bash -c '...'); and in every case the commands it runs through a runner
// (sudo, env, xargs with options, find -exec, su -c, ssh) and its script's
// commands must be allowed too, whatever matched.
func allowed(cmds []shell.Command, match func(i int) bool) bool {
	kids := make([][]int, len(cmds))
	for i := range cmds {
		if p := cmds[i].Parent; p >= 0 {
			kids[p] = append(kids[p], i)
		}
	}
	var form func(i int) bool
	var duties func(i int) bool
	sat := func(i int) bool { return form(i) && duties(i) }
	form = func(i int) bool {
		for _, k := range kids[i] {
			if cmds[k].Via == shell.Wrapper {
				// A transparent wrapper's own line allows nothing: the
				// command it runs must be allowed (Bash(nohup *) does not
				// allow nohup rm -rf /). Claude Code strips such wrappers
				// before it matches, so its decisions are the same.
				return form(k)
			}
		}
		if match(i) {
			return true
		}
		for _, k := range kids[i] {
			if cmds[k].Via == shell.Script {
				return true // the script is judged instead (duties)
			}
		}
		return false
	}
	duties = func(i int) bool {
		for _, k := range kids[i] {
			switch cmds[k].Via {
			case shell.Runner, shell.Script:
				if !sat(k) {
					return false
				}
			case shell.Wrapper:
				if !duties(k) {
					return false
				}
			}
		}
		return true
	}
	for i := range cmds {
		if cmds[i].Parent == -1 && !sat(i) {
			return false
		}
	}
	return true
}
