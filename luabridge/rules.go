package luabridge

import (
	"errors"
	"fmt"
	"path"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/shell"
	"github.com/awaken-lua/awaken-lua/toolrules"
)

// awaken.shell and awaken.rules hand plugins package shell's splitter and
// package toolrules' permission rules (Claude Code's syntax), so a Lua
// policy judges a Bash command and a pasted permissions block exactly as
// the Go code does, without a second implementation in Lua.
//
//	awaken.shell.split(cmd)            {{argv, literal, text, line, dynamic, unknown, via, parent, env, writes}, ...} | nil, err
//	awaken.rules.compile{allow, ask, deny, project_dir?, home_dir?, cwd?}
//	                                   policy | nil, err, problems
//	policy:decide(call [, dirs | ctx]) behavior, rule, reason | nil
//	policy:decide(name, args [, dirs])
//	policy:denies_tool(name)           boolean
//	awaken.rules.parse(rule [, dirs])  rule | nil, err
//	awaken.rules.specifier(x [, dirs]) rule: x against the call's own tool's primary argument
//	rule:match(behavior, call | name, args [, dirs])
//	                                   boolean (a specifier: nil when the tool has none)
//	awaken.rules.primary(name)         field, kind | nil
//
// A policy or a rule is immutable and shared by every state: a plugin's
// prepare can return one inside its prepared table. call is the gate's
// call or ctx.tool, read in Go without converting its arguments; a table
// of arguments is read only for the fields the rules can look at. Every
// function is bounded: a command is at most shell.MaxInput bytes, a split
// at most shell.MaxCommands commands and shell.MaxWords words, a policy
// at most rulesMax rules; long work looks at the call's deadline, and a
// decision the deadline cuts short raises it (a gate that raises blocks).

const (
	// rulesMax bounds the rules of one compiled policy.
	rulesMax = 4096
	// rulesPoll is how many rules or commands are converted between two
	// looks at the deadline.
	rulesPoll = 64
)

// The registry fields of the metatables of policies and rules, made once
// per state on first use.
const (
	rulesPolicyMetaKey = "awaken.rules.policy"
	rulesRuleMetaKey   = "awaken.rules.rule"
)

// dirs anchor path rules: ./x and bare names under the working directory
// (cwd), /x under the project, each standing in for the other when unset
// (toolrules.Call; deny and ask /x rules are tried above the cwd too), ~/x
// under the home directory. Empty: such rules cannot be judged, and fail
// closed.
type dirs struct{ project, home, work string }

// rulesPolicy is a compiled permissions block.
type rulesPolicy struct {
	p      toolrules.Policy
	dirs   dirs
	params []string // the input fields the rules name as param:value
}

// rulesRule is one compiled rule; spec: a specifier matched on the call's
// own tool (awaken.rules.specifier).
type rulesRule struct {
	r    toolrules.Rule
	dirs dirs
	spec bool
}

// shared marks Go values that may sit in a plugin's prepared table: they
// are immutable and safe for concurrent use, and every state that reads
// ctx.prepared wraps them in its own userdata.
type shared interface {
	toLua(L *lua.LState) lua.LValue
}

func (p *rulesPolicy) toLua(L *lua.LState) lua.LValue {
	return rulesUserData(L, p, rulesPolicyMetaKey)
}

func (r *rulesRule) toLua(L *lua.LState) lua.LValue {
	return rulesUserData(L, r, rulesRuleMetaKey)
}

func rulesUserData(L *lua.LState, v any, key string) *lua.LUserData {
	ud := L.NewUserData()
	ud.Value = v
	ud.Metatable = rulesMeta(L, key)
	return ud
}

// shellFuncs are the functions of awaken.shell, for one Lua state: a
// state runs one call at a time, so its splitter reuses one parser and
// remembers the last commands it split (agents run the same few commands
// over and over; a split is a pure function of the text), with the
// read-only Lua value it returned for them.
func shellFuncs() map[string]lua.LGFunction {
	sc := &splitCache{seen: map[string]*splitResult{}}
	return map[string]lua.LGFunction{"split": func(L *lua.LState) int { return shellSplit(L, sc) }}
}

// Bounds of a state's split cache, which every warm state carries: a
// command longer than maxCachedCommand is split every time, and the cache
// starts over once it holds maxCachedSplits commands or maxCachedBytes of
// them (a split is a few times the size of its text, so a state holds a
// few hundred KB of splits at the most, whatever commands it is sent). The
// Lua values kept with them are bounded apart, by maxCachedCells (see
// luaCells): past it the values are dropped and the splits kept.
const (
	maxCachedSplits  = 128
	maxCachedCommand = 256
	maxCachedBytes   = 16 << 10
	maxCachedCells   = 2048
)

type splitResult struct {
	cmds []shell.Command // read only: shared by every hit
	err  error
	lv   lua.LValue // the Lua value returned for it, once made
}

type splitCache struct {
	sp    shell.Splitter
	seen  map[string]*splitResult
	bytes int // of the commands in seen
	cells int // of the Lua values in seen
}

// split returns src's split, kept in the cache when src is short enough.
func (c *splitCache) split(src string) *splitResult {
	if r, ok := c.seen[src]; ok {
		return r
	}
	cmds, err := c.sp.Split(src)
	r := &splitResult{cmds: cmds, err: err}
	if len(src) <= maxCachedCommand {
		if len(c.seen) >= maxCachedSplits || c.bytes+len(src) > maxCachedBytes {
			clear(c.seen)
			c.bytes, c.cells = 0, 0
		}
		c.seen[src] = r
		c.bytes += len(src)
	}
	return r
}

// keep keeps r's Lua value lv, which costs cells, if the bound allows;
// else it drops the values kept so far first.
func (c *splitCache) keep(r *splitResult, lv lua.LValue, cells int) {
	if cells > maxCachedCells {
		return
	}
	if c.cells+cells > maxCachedCells {
		for _, x := range c.seen {
			x.lv = nil
		}
		c.cells = 0
	}
	r.lv = lv
	c.cells += cells
}

// luaCells estimates what a split's Lua value holds: its tables and
// their entries.
func luaCells(cmds []shell.Command) int {
	n := 2
	for i := range cmds {
		c := &cmds[i]
		n += 24 + 2*len(c.Words) + len(c.Env) + 6*len(c.Writes)
	}
	return n
}

// shellSplit is awaken.shell.split(cmd). The list and its commands are
// read-only views: a repeated command returns the value made the first
// time, which no hook can have changed.
func shellSplit(L *lua.LState, sc *splitCache) int {
	src := L.CheckString(1)
	r := sc.split(src)
	if r.err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(r.err.Error()))
		return 2
	}
	if r.lv != nil {
		L.Push(r.lv)
		return 1
	}
	out := L.CreateTable(len(r.cmds), 0)
	for i := range r.cmds {
		if i%rulesPoll == 0 {
			checkDone(L)
		}
		out.Append(commandToLua(L, &r.cmds[i]))
	}
	lv := newView(L, out, "awaken.shell.split's result")
	if sc.seen[src] == r {
		sc.keep(r, lv, luaCells(r.cmds))
	}
	L.Push(lv)
	return 1
}

// commandToLua converts one simple command, read-only.
func commandToLua(L *lua.LState, c *shell.Command) *lua.LTable {
	const what = "a command of awaken.shell.split"
	t := L.CreateTable(0, 10)
	argv := L.CreateTable(len(c.Argv), 0)
	literal := L.CreateTable(len(c.Words), 0)
	for _, w := range c.Words {
		argv.Append(lua.LString(w.Value))
		literal.Append(lua.LBool(w.Literal))
	}
	t.RawSetString("argv", newView(L, argv, what))
	t.RawSetString("literal", newView(L, literal, what))
	t.RawSetString("text", lua.LString(c.Text))
	t.RawSetString("line", lua.LString(c.Line()))
	t.RawSetString("dynamic", lua.LBool(c.Dynamic))
	t.RawSetString("unknown", lua.LBool(c.Unknown()))
	t.RawSetString("via", lua.LString(c.Via.String()))
	if c.Parent >= 0 {
		t.RawSetString("parent", lua.LNumber(c.Parent+1))
	}
	env := L.CreateTable(len(c.Env), 0)
	for _, e := range c.Env {
		env.Append(lua.LString(e))
	}
	t.RawSetString("env", newView(L, env, what))
	writes := L.CreateTable(len(c.Writes), 0)
	for _, w := range c.Writes {
		wt := L.CreateTable(0, 3)
		wt.RawSetString("value", lua.LString(w.Value))
		wt.RawSetString("source", lua.LString(w.Source))
		wt.RawSetString("literal", lua.LBool(w.Literal))
		writes.Append(newView(L, wt, what))
	}
	t.RawSetString("writes", newView(L, writes, what))
	return newView(L, t, what)
}

// rulesFuncs are the functions of awaken.rules.
func rulesFuncs() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"compile":   rulesCompile,
		"parse":     rulesParse,
		"specifier": rulesSpecifier,
		"primary":   rulesPrimary,
	}
}

// rulesCompile is awaken.rules.compile{allow, ask, deny, project_dir,
// home_dir, cwd}. Bad rules are the caller's data, not a misuse: they come back
// as nil, the message (code config_invalid) and the list of problems, each
// named by its list and 0-based index as a config error is.
func rulesCompile(L *lua.LState) int {
	spec := viewed(L.CheckTable(1))
	spec.ForEach(func(k, _ lua.LValue) {
		switch k {
		case lua.LString("allow"), lua.LString("ask"), lua.LString("deny"), lua.LString("project_dir"), lua.LString("home_dir"), lua.LString("cwd"):
		default:
			L.RaiseError("awaken.rules.compile: unknown field %s (allow, ask, deny, project_dir, home_dir, cwd)", truncate(k.String(), 80))
		}
	})
	var problems []string
	type src struct {
		index int
		text  string
	}
	lists := map[string][]src{}
	total := 0
	for _, key := range []string{"allow", "ask", "deny"} {
		var t *lua.LTable
		switch v := spec.RawGetString(key).(type) {
		case *lua.LNilType:
			continue
		case *lua.LTable:
			t = viewed(v)
		default:
			problems = append(problems, fmt.Sprintf("%s: a list of rule strings, not a %s", key, v.Type()))
			continue
		}
		n := t.Len()
		if total += n; total > rulesMax {
			L.Push(lua.LNil)
			L.Push(lua.LString(fmt.Sprintf("%s: more than the %d rules one policy holds", errs.ConfigInvalid, rulesMax)))
			return 2
		}
		srcs := make([]src, 0, n)
		for i := 1; i <= n; i++ {
			s, ok := t.RawGetInt(i).(lua.LString)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s[%d]: a rule is a string, not a %s", key, i-1, t.RawGetInt(i).Type()))
				continue
			}
			srcs = append(srcs, src{i - 1, string(s)})
		}
		lists[key] = srcs
	}
	d, dirProblems := dirsFrom(spec)
	problems = append(problems, dirProblems...)
	pol := &rulesPolicy{dirs: d}
	seen := map[string]bool{}
	for _, b := range []toolrules.Behavior{toolrules.Allow, toolrules.Ask, toolrules.Deny} {
		var out []toolrules.Rule
		for i, s := range lists[string(b)] {
			if i%rulesPoll == 0 {
				checkDone(L)
			}
			r, err := toolrules.ParseRule(s.text)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s[%d]: %s", b, s.index, message(err)))
				continue
			}
			if p := r.Param(); p != "" && !seen[p] {
				seen[p] = true
				pol.params = append(pol.params, p)
			}
			out = append(out, r)
		}
		switch b {
		case toolrules.Allow:
			pol.p.Allow = out
		case toolrules.Ask:
			pol.p.Ask = out
		case toolrules.Deny:
			pol.p.Deny = out
		}
	}
	if len(problems) > 0 {
		list := L.CreateTable(len(problems), 0)
		for _, p := range problems {
			list.Append(lua.LString(p))
		}
		L.Push(lua.LNil)
		L.Push(lua.LString(string(errs.ConfigInvalid) + ": " + strings.Join(problems, "; ")))
		L.Push(list)
		return 3
	}
	L.Push(pol.toLua(L))
	return 1
}

// message is an error's message without its code.
func message(err error) string {
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}

// dirsFrom reads project_dir, home_dir and cwd: absolute paths, or absent.
func dirsFrom(t *lua.LTable) (dirs, []string) {
	var d dirs
	var problems []string
	for _, f := range []struct {
		name string
		to   *string
	}{{"project_dir", &d.project}, {"home_dir", &d.home}, {"cwd", &d.work}} {
		switch v := t.RawGetString(f.name).(type) {
		case *lua.LNilType:
		case lua.LString:
			if !path.IsAbs(string(v)) {
				problems = append(problems, fmt.Sprintf("%s: %q is not an absolute path", f.name, truncate(string(v), 200)))
				continue
			}
			*f.to = path.Clean(string(v))
		default:
			problems = append(problems, fmt.Sprintf("%s: a path, not a %s", f.name, v.Type()))
		}
	}
	return d, problems
}

// rulesParse is awaken.rules.parse(rule [, dirs]).
func rulesParse(L *lua.LState) int {
	return parseRule(L, L.CheckString(1), false)
}

// rulesSpecifier is awaken.rules.specifier(x [, dirs]): x as the
// specifier of a rule on whatever tool a call names.
func rulesSpecifier(L *lua.LState) int {
	return parseRule(L, L.CheckString(1), true)
}

func parseRule(L *lua.LState, src string, spec bool) int {
	var d dirs
	if t, ok := L.Get(2).(*lua.LTable); ok {
		var problems []string
		if d, problems = dirsFrom(viewed(t)); len(problems) > 0 {
			L.Push(lua.LNil)
			L.Push(lua.LString(string(errs.ConfigInvalid) + ": " + strings.Join(problems, "; ")))
			return 2
		}
	} else if L.Get(2) != lua.LNil {
		L.ArgError(2, "a table {project_dir, home_dir, cwd} expected")
	}
	text := src
	if spec {
		if len(src) > toolrules.MaxRule {
			L.Push(lua.LNil)
			L.Push(lua.LString(fmt.Sprintf("%s: the specifier is %d bytes, more than %d", errs.ConfigInvalid, len(src), toolrules.MaxRule)))
			return 2
		}
		text = "Tool(" + src + ")"
	}
	r, err := toolrules.ParseRule(text)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Error()))
		return 2
	}
	L.Push((&rulesRule{r: r, dirs: d, spec: spec}).toLua(L))
	return 1
}

// rulesPrimary is awaken.rules.primary(name): the input field Tool(x)
// matches x against, and how ("command", "path", "url", "text", "patch").
func rulesPrimary(L *lua.LState) int {
	t, ok := toolrules.Lookup(L.CheckString(1))
	if !ok {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(lua.LString(t.Arg))
	L.Push(lua.LString(t.Kind.String()))
	return 2
}

// rulesMeta returns the state's metatable of policies or rules. Its
// methods share the state's matcher cache.
func rulesMeta(L *lua.LState, key string) *lua.LTable {
	reg := L.Get(lua.RegistryIndex).(*lua.LTable)
	if mt, ok := reg.RawGetString(key).(*lua.LTable); ok {
		return mt
	}
	cache := &matcherCache{}
	readOnly := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s is read-only", L.CheckUserData(1).Value.(fmt.Stringer).String())
		return 0
	})
	str := L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString(L.CheckUserData(1).Value.(fmt.Stringer).String()))
		return 1
	})
	newMeta := func(methods map[string]lua.LGFunction) *lua.LTable {
		idx := L.CreateTable(0, len(methods))
		for name, fn := range methods {
			idx.RawSetString(name, L.NewFunction(fn))
		}
		mt := L.CreateTable(0, 4)
		mt.RawSetString("__index", idx)
		mt.RawSetString("__newindex", readOnly)
		mt.RawSetString("__tostring", str)
		mt.RawSetString("__metatable", lua.LString("protected"))
		return mt
	}
	pm := newMeta(map[string]lua.LGFunction{
		"decide":      func(L *lua.LState) int { return policyDecide(L, cache) },
		"denies_tool": policyDeniesTool,
	})
	rm := newMeta(map[string]lua.LGFunction{
		"match": func(L *lua.LState) int { return ruleMatch(L, cache) },
	})
	reg.RawSetString(rulesPolicyMetaKey, pm)
	reg.RawSetString(rulesRuleMetaKey, rm)
	if key == rulesPolicyMetaKey {
		return pm
	}
	return rm
}

func (p *rulesPolicy) String() string {
	return fmt.Sprintf("awaken.rules policy (%d allow, %d ask, %d deny)", len(p.p.Allow), len(p.p.Ask), len(p.p.Deny))
}

func (r *rulesRule) String() string {
	if r.spec {
		return "awaken.rules specifier " + r.r.Specifier
	}
	return "awaken.rules rule " + r.r.Source
}

// matcherCache keeps the Matcher of the call a state last judged, so the
// rules a plugin matches one by one against the gate's call split its
// command once. A call view lives for one hook call, and the cache holds
// it, so its address is never reused while cached.
type matcherCache struct {
	cv *callView
	d  dirs
	m  *toolrules.Matcher
}

// matcherFor reads the call at argument n: the gate's call or ctx.tool
// (then the Matcher is cached), or a name and a table of arguments. fields
// are the input fields the rules may read beyond the tool's own. It
// returns the argument after the call.
func (mc *matcherCache) matcherFor(L *lua.LState, n int, d dirs, params []string) (*toolrules.Matcher, int) {
	if ud, ok := L.Get(n).(*lua.LUserData); ok {
		cv, ok := ud.Value.(*callView)
		if !ok {
			L.ArgError(n, "a tool call (the gate's call or ctx.tool) or a tool name expected")
		}
		d = dirsOverride(L, n+1, d)
		if mc.cv == cv && mc.d == d && mc.m != nil {
			return mc.m, n + 1
		}
		m := toolrules.NewMatcher(toolrules.Call{Tool: cv.t.Call.Name, Input: cv.t.Call.Args,
			WorkDir: d.work, ProjectDir: d.project, HomeDir: d.home, Stop: func() bool { return done(L) }})
		*mc = matcherCache{cv: cv, d: d, m: m}
		return m, n + 1
	}
	name := L.CheckString(n)
	var input map[string]any
	switch args := L.Get(n + 1).(type) {
	case *lua.LTable:
		input = inputFields(viewed(args), name, params)
	case *lua.LNilType:
	default:
		L.ArgError(n+1, "a table of arguments expected")
	}
	d = dirsOverride(L, n+2, d)
	return toolrules.NewMatcher(toolrules.Call{Tool: name, Input: input,
		WorkDir: d.work, ProjectDir: d.project, HomeDir: d.home, Stop: func() bool { return done(L) }}), n + 2
}

// dirsOverride reads an optional {project_dir, home_dir, cwd} at argument
// n; what it sets replaces d's. It may be the hook's ctx instead: its run's
// working directory (ctx.run.cwd) is cwd when it is an absolute path, read
// here so that a gate's decision does not build the ctx.run table (a
// dozen allocations) only to hand one string back.
func dirsOverride(L *lua.LState, n int, d dirs) dirs {
	switch t := L.Get(n).(type) {
	case *lua.LNilType:
		return d
	case *lua.LUserData:
		c, ok := t.Value.(*hookCall)
		if !ok {
			break
		}
		if c.ended {
			L.ArgError(n, "this ctx belongs to a call that has ended; use the ctx your function received")
		}
		if cwd := c.in.Run.Cwd; path.IsAbs(cwd) {
			d.work = path.Clean(cwd)
		}
		return d
	case *lua.LTable:
		o, problems := dirsFrom(viewed(t))
		if len(problems) > 0 {
			L.ArgError(n, strings.Join(problems, "; "))
		}
		if o.project != "" {
			d.project = o.project
		}
		if o.home != "" {
			d.home = o.home
		}
		if o.work != "" {
			d.work = o.work
		}
		return d
	}
	L.ArgError(n, "a table {project_dir, home_dir, cwd} or ctx expected")
	return d
}

// inputFields reads the arguments a rule can look at: the tool's primary
// argument, its family's argument, its parameters and the fields rules
// name as param:value. Rules read strings, numbers and booleans only; a
// field of another type is left out, which they judge as a missing one.
func inputFields(t *lua.LTable, tool string, params []string) map[string]any {
	in := make(map[string]any, 4)
	get := func(k string) {
		if k == "" {
			return
		}
		switch v := t.RawGetString(k).(type) {
		case lua.LString:
			in[k] = string(v)
		case lua.LNumber:
			in[k] = float64(v)
		case lua.LBool:
			in[k] = bool(v)
		}
	}
	if e, ok := toolrules.Lookup(tool); ok {
		get(e.Arg)
		get(e.FamilyArg)
		for _, p := range e.Params {
			get(p)
		}
	}
	for _, p := range params {
		get(p)
	}
	return in
}

// policyDecide is policy:decide(call | name, args [, dirs]).
func policyDecide(L *lua.LState, cache *matcherCache) int {
	p, ok := L.CheckUserData(1).Value.(*rulesPolicy)
	if !ok {
		L.ArgError(1, "a policy from awaken.rules.compile expected (write policy:decide(...))")
	}
	m, _ := cache.matcherFor(L, 2, p.dirs, p.params)
	d := m.Decide(&p.p)
	checkDone(L) // a decision the deadline cut short is no decision
	if d.Behavior == "" {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(lua.LString(d.Behavior))
	L.Push(lua.LString(d.Rule.Source))
	L.Push(lua.LString(d.Reason))
	return 3
}

// policyDeniesTool is policy:denies_tool(name).
func policyDeniesTool(L *lua.LState) int {
	p, ok := L.CheckUserData(1).Value.(*rulesPolicy)
	if !ok {
		L.ArgError(1, "a policy from awaken.rules.compile expected (write policy:denies_tool(name))")
	}
	L.Push(lua.LBool(p.p.DeniesTool(L.CheckString(2), nil)))
	return 1
}

// ruleMatch is rule:match(behavior, call | name, args [, dirs]).
func ruleMatch(L *lua.LState, cache *matcherCache) int {
	r, ok := L.CheckUserData(1).Value.(*rulesRule)
	if !ok {
		L.ArgError(1, "a rule from awaken.rules.parse or specifier expected (write rule:match(...))")
	}
	b := toolrules.Behavior(L.CheckString(2))
	if b != toolrules.Allow && b != toolrules.Ask && b != toolrules.Deny {
		L.ArgError(2, `"allow", "ask" or "deny" expected`)
	}
	var params []string
	if p := r.r.Param(); p != "" {
		params = []string{p}
	}
	m, _ := cache.matcherFor(L, 3, r.dirs, params)
	if !r.spec {
		ok := m.Match(&r.r, b)
		checkDone(L)
		L.Push(lua.LBool(ok))
		return 1
	}
	matched, known := m.MatchArgument(&r.r, b)
	checkDone(L)
	if !known {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(lua.LBool(matched))
	return 1
}
