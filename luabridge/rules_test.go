package luabridge_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/shell"
)

// rulesModule is a Lua module over awaken.shell and awaken.rules, called
// from Go with plain values.
const rulesModule = `
local awaken = require("awaken")
local M = {}
function M.split(cmd) return awaken.shell.split(cmd) end
function M.compile(spec)
  local p, err, problems = awaken.rules.compile(spec)
  if not p then return nil, err, problems end
  return tostring(p)
end
function M.decide(spec, name, args, dirs)
  local p, err = awaken.rules.compile(spec)
  if not p then error(err) end
  return p:decide(name, args, dirs)
end
function M.denies_tool(spec, name)
  return (assert(awaken.rules.compile(spec))):denies_tool(name)
end
function M.match(rule, behavior, name, args, dirs)
  local r, err = awaken.rules.parse(rule, dirs)
  if not r then return nil, err end
  return r:match(behavior, name, args)
end
function M.match_specifier(spec, behavior, name, args)
  local r, err = awaken.rules.specifier(spec)
  if not r then return "error", err end
  local m = r:match(behavior, name, args)
  if m == nil then return "unknown" end
  return m
end
function M.encoded() return awaken.json.encode(awaken.rules.compile {}) end
function M.primary(name) return awaken.rules.primary(name) end
-- split_twice splits the same text twice, trying to change what the first
-- split returned in between: the result is read-only, and a state hands
-- out the same value again.
function M.split_twice(cmd)
  local a = assert(awaken.shell.split(cmd))
  local writes = {
    function() a[1].argv[1] = "changed" end,
    function() a[2] = nil end,
    function() a[1].text = "changed" end,
    function() a[1].env[1] = "X=1" end,
    function() table.insert(a, {}) end,
  }
  local refused = 0
  for _, w in ipairs(writes) do
    local ok, err = pcall(w)
    if not ok and tostring(err):find("read%-only") then refused = refused + 1 end
  end
  local b = assert(awaken.shell.split(cmd))
  return b[1].argv[1], #b, refused, rawequal(a, b)
end
function M.split_bad_twice(cmd)
  local a, e1 = awaken.shell.split(cmd)
  local b, e2 = awaken.shell.split(cmd)
  return a == nil and b == nil and e1 == e2, e2
end
local misuse = {
  unknown_field = function() awaken.rules.compile { allow = {}, defaultMode = "x" } end,
  not_a_table = function() awaken.rules.compile("Bash") end,
  write = function() local p = awaken.rules.compile {} p.x = 1 end,
  decide_bool = function() awaken.rules.compile {}:decide(true) end,
  decide_args = function() awaken.rules.compile {}:decide("Bash", "x") end,
  behavior = function() awaken.rules.parse("Bash"):match("maybe", "x") end,
  dot_call = function() local p = awaken.rules.compile {} p.decide({}, "Bash") end,
  rule_as_policy = function() local p = awaken.rules.compile {} p.decide(awaken.rules.parse("Bash"), "Bash") end,
}
function M.misuse(name) misuse[name]() end
return M`

// openRules opens the rules module with a generous budget per call (see
// testHookTimeout).
func openRules(t *testing.T) *luabridge.Module {
	t.Helper()
	m, err := luabridge.OpenModule(luabridge.Source{FS: fstest.MapFS{"r.lua": {Data: []byte(rulesModule)}}, Name: "t"}, "r",
		luabridge.Limits{HookTimeout: testHookTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func call(t *testing.T, m *luabridge.Module, fn string, args ...any) []any {
	t.Helper()
	out, err := m.Call(fn, args...)
	if err != nil {
		t.Fatalf("%s: %v", fn, err)
	}
	return out
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// awaken.shell.split gives Lua what shell.Split gives Go: the simple
// commands wherever they hide, with how each was found.
func TestShellSplit(t *testing.T) {
	m := openRules(t)
	tests := []struct {
		cmd  string
		want []string // argv joined by spaces, then |via|parent
	}{
		{"echo ok && rm -rf /", []string{"echo ok|top|-", "rm -rf /|top|-"}},
		{"ls || rm x; make | tee log", []string{"ls|top|-", "rm x|top|-", "make|top|-", "tee log|top|-"}},
		{"$(rm -rf /)", []string{"$(rm -rf /)|top|-", "rm -rf /|top|-"}},
		{"echo `rm -rf /`", []string{"echo `rm -rf /`|top|-", "rm -rf /|top|-"}},
		{"(cd /; rm -rf x)", []string{"cd /|top|-", "rm -rf x|top|-"}},
		{"bash -c 'rm -rf /'", []string{"bash -c rm -rf /|top|-", "rm -rf /|script|1"}},
		{"sudo rm x", []string{"sudo rm x|top|-", "rm x|runner|1"}},
		{"timeout 5 rm x", []string{"timeout 5 rm x|top|-", "rm x|wrapper|1"}},
		{"FOO=1 rm x > out", []string{"rm x|top|-"}},
	}
	for _, tc := range tests {
		out := call(t, m, "split", tc.cmd)
		cmds, ok := out[0].([]any)
		if !ok {
			t.Fatalf("split(%q) = %v", tc.cmd, out)
		}
		var got []string
		for _, c := range cmds {
			c := c.(map[string]any)
			parent := "-"
			if p, ok := c["parent"].(float64); ok {
				parent = fmt.Sprint(p)
			}
			got = append(got, strings.Join(strs(c["argv"]), " ")+"|"+c["via"].(string)+"|"+parent)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("split(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}

	// A repeated split is answered from the state's cache, in fresh tables.
	if out := call(t, m, "split_twice", "rm -rf / && ls"); out[0] != "rm" || out[1] != float64(2) || out[2] != float64(5) || out[3] != true {
		t.Errorf("split twice, with writes in between: %v (want rm, 2 commands, 5 writes refused, the same value)", out)
	}
	if out := call(t, m, "split_bad_twice", "rm 'x"); out[0] != true || !strings.Contains(fmt.Sprint(out[1]), "not valid shell syntax") {
		t.Errorf("a bad command split twice: %v", out)
	}

	// every field of one command
	c := call(t, m, "split", `FOO=1 rm -rf "$DIR" > out.txt 2>&1`)[0].([]any)[0].(map[string]any)
	want := map[string]any{
		"argv": []any{"rm", "-rf", `"$DIR"`}, "literal": []any{true, true, false},
		"text": `FOO=1 rm -rf "$DIR" > out.txt 2>&1`, "line": `rm -rf "$DIR"`,
		"dynamic": true, "unknown": false, "via": "top", "env": []any{"FOO=1"},
		"writes": []any{map[string]any{"value": "out.txt", "source": "out.txt", "literal": true}},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("split fields = %v\nwant %v", c, want)
	}
	c = call(t, m, "split", "$CMD x")[0].([]any)[0].(map[string]any)
	if c["unknown"] != true || c["dynamic"] != true {
		t.Errorf("$CMD x: unknown = %v, dynamic = %v", c["unknown"], c["dynamic"])
	}

	// what cannot be split is nil and a message with the code
	for _, bad := range []string{"rm 'x", "echo $(", strings.Repeat("a", shell.MaxInput+1), strings.Repeat("a;", shell.MaxCommands+1)} {
		out := call(t, m, "split", bad)
		if out[0] != nil || len(out) < 2 {
			t.Fatalf("split(%.20q) = %v, want nil and an error", bad, out)
		}
		if msg, _ := out[1].(string); !strings.HasPrefix(msg, "shell_unparsable: ") {
			t.Errorf("split(%.20q) error %q does not start with the code", bad, msg)
		}
	}
}

var ccBlock = map[string]any{
	"allow": []any{"Bash(npm run test:*)", "Bash(git diff *)", "Read", "Edit(src/**)", "WebFetch(domain:example.com)", "mcp__docs"},
	"ask":   []any{"Bash(git push *)", "mcp__github__create_issue"},
	"deny":  []any{"Bash(rm *)", "Read(./.env)", "WebFetch(domain:evil.com)", "mcp__prod"},
	// the project the path rules are anchored to
	"project_dir": "/home/dev/shop", "home_dir": "/home/dev",
}

func bashArgs(cmd string) map[string]any {
	return map[string]any{"command": cmd, "description": "what it does"}
}

// A compiled block decides as package toolrules does, through a table of
// arguments: Claude Code's forms, deny and ask on any simple command,
// allow on every one, and an unparsable command fails closed.
func TestRulesDecide(t *testing.T) {
	m := openRules(t)
	tests := []struct {
		name string
		args map[string]any
		want string // behavior and rule, or ""
	}{
		{"Bash", bashArgs("rm -rf /"), "deny Bash(rm *)"},
		{"Bash", bashArgs("echo ok && rm -rf /"), "deny Bash(rm *)"},
		{"Bash", bashArgs("$(rm -rf /)"), "deny Bash(rm *)"},
		{"Bash", bashArgs("echo `rm -rf /`"), "deny Bash(rm *)"},
		{"Bash", bashArgs("(cd /tmp && rm -rf x)"), "deny Bash(rm *)"},
		{"Bash", bashArgs("bash -c 'rm -rf /'"), "deny Bash(rm *)"},
		{"Bash", bashArgs("sudo rm -rf /"), "deny Bash(rm *)"},
		{"Bash", bashArgs("FOO=1 rm -rf /"), "deny Bash(rm *)"},
		{"Bash", bashArgs("ls > out.txt; rm x"), "deny Bash(rm *)"},
		{"Bash", bashArgs("ls | rm x"), "deny Bash(rm *)"},
		{"Bash", bashArgs("ls || rm x"), "deny Bash(rm *)"},
		{"Bash", bashArgs("npm run test 'unclosed"), "deny Bash(rm *)"}, // fails closed
		{"Bash", bashArgs("git push origin main"), "ask Bash(git push *)"},
		{"Bash", bashArgs("npm run test -- --watch=false"), "allow Bash(npm run test:*)"},
		{"Bash", bashArgs("npm run test:unit"), ""}, // test:* is the prefix npm run test, word by word
		{"Bash", bashArgs("npm run test"), "allow Bash(npm run test:*)"},
		{"Bash", bashArgs("npm run test && git diff HEAD"), "allow Bash(npm run test:*)"},
		{"Bash", bashArgs("npm run test && make"), ""}, // allow needs every command
		{"Bash", bashArgs("npm run test > out.txt"), ""},
		{"Bash", bashArgs("npm run build"), ""},
		{"Read", map[string]any{"file_path": "/home/dev/shop/.env"}, "deny Read(./.env)"},
		{"Read", map[string]any{"file_path": "/home/dev/shop/README.md"}, "allow Read"},
		{"Edit", map[string]any{"file_path": "/home/dev/shop/src/a.go", "old_string": "a", "new_string": "b"}, "allow Edit(src/**)"},
		{"Write", map[string]any{"file_path": "/home/dev/shop/src/a.go", "content": "x"}, "allow Edit(src/**)"},
		{"Edit", map[string]any{"file_path": "/home/dev/shop/lib/a.go"}, ""},
		{"Edit", map[string]any{"file_path": "/home/dev/shop/.env"}, "deny Read(./.env)"},
		{"WebFetch", map[string]any{"url": "https://example.com/docs", "prompt": "summarize"}, "allow WebFetch(domain:example.com)"},
		{"WebFetch", map[string]any{"url": "https://evil.com/", "prompt": "x"}, "deny WebFetch(domain:evil.com)"},
		{"WebFetch", map[string]any{"url": "https://other.org/", "prompt": "x"}, ""},
		{"mcp__docs__search", map[string]any{"q": "x"}, "allow mcp__docs"},
		{"mcp__github__create_issue", map[string]any{"title": "x"}, "ask mcp__github__create_issue"},
		{"mcp__prod__drop", nil, "deny mcp__prod"},
		{"Bash", map[string]any{"command": 42}, "deny Bash(rm *)"}, // not a command: fails closed
	}
	for _, tc := range tests {
		out := call(t, m, "decide", ccBlock, tc.name, tc.args)
		got := ""
		if out[0] != nil {
			got = out[0].(string) + " " + out[1].(string)
			if reason, _ := out[2].(string); !strings.Contains(reason, out[1].(string)) {
				t.Errorf("%s %v: reason %q does not name the rule", tc.name, tc.args, reason)
			}
		}
		if got != tc.want {
			t.Errorf("decide(%s %v) = %q, want %q", tc.name, tc.args, got, tc.want)
		}
	}

	// Without a project directory, rules anchored to it cannot be judged:
	// deny matches, allow does not; a call can name its own.
	noDirs := map[string]any{"allow": []any{"Edit(src/**)"}, "deny": []any{"Read(./.env)"}}
	if out := call(t, m, "decide", noDirs, "Read", map[string]any{"file_path": "/p/README.md"}); out[0] != "deny" {
		t.Errorf("a project rule without a project: %v, want deny", out)
	}
	if out := call(t, m, "decide", noDirs, "Edit", map[string]any{"file_path": "/p/src/a.go"}); out[0] != "deny" {
		t.Errorf("a project rule without a project: %v, want deny (Read deny rules cover Edit)", out)
	}
	allowOnly := map[string]any{"allow": []any{"Edit(src/**)"}}
	if out := call(t, m, "decide", allowOnly, "Edit", map[string]any{"file_path": "/p/src/a.go"}); out[0] != nil {
		t.Errorf("a project allow rule without a project: %v, want no decision", out)
	}
	if out := call(t, m, "decide", allowOnly, "Edit", map[string]any{"file_path": "/p/src/a.go"}, map[string]any{"project_dir": "/p"}); out[0] != "allow" {
		t.Errorf("a project given per call: %v, want allow", out)
	}
	dirs := map[string]any{"project_dir": "/p"}
	if out := call(t, m, "decide", noDirs, "Read", map[string]any{"file_path": "/p/README.md"}, dirs); out[0] != nil {
		t.Errorf("a project given per call: %v, want no decision", out)
	}

	// The working directory anchors ./x and bare names, the project /x,
	// each standing in for the other: per call, or compiled in.
	anchored := map[string]any{"allow": []any{"Read", "Edit(src/**)", "Edit(/docs/**)"}, "deny": []any{"Read(./.env)"}}
	read := func(p string) map[string]any { return map[string]any{"file_path": p} }
	for _, tc := range []struct {
		name       string
		tool, path string
		dirs       map[string]any
		want       any
	}{
		{"the cwd's .env", "Read", "/p/api/.env", map[string]any{"cwd": "/p/api"}, "deny"},
		{"another file in the cwd", "Read", "/p/api/main.go", map[string]any{"cwd": "/p/api"}, "allow"},
		{"src under the cwd", "Edit", "/p/api/src/a.go", map[string]any{"cwd": "/p/api", "project_dir": "/p"}, "allow"},
		{"src under the project, not the cwd", "Edit", "/p/src/a.go", map[string]any{"cwd": "/p/api", "project_dir": "/p"}, nil},
		{"/docs under the project", "Edit", "/p/docs/a.md", map[string]any{"cwd": "/p/api", "project_dir": "/p"}, "allow"},
		{"/docs under the cwd without a project", "Edit", "/p/api/docs/a.md", map[string]any{"cwd": "/p/api"}, "allow"},
		{"/docs under the cwd with a project", "Edit", "/p/api/docs/a.md", map[string]any{"cwd": "/p/api", "project_dir": "/p"}, nil},
		{"the project's .env without a cwd", "Read", "/p/.env", map[string]any{"project_dir": "/p"}, "deny"},
	} {
		if out := call(t, m, "decide", anchored, tc.tool, read(tc.path), tc.dirs); out[0] != tc.want {
			t.Errorf("%s: decide per call = %v, want %v", tc.name, out[0], tc.want)
		}
		spec := map[string]any{}
		for k, v := range anchored {
			spec[k] = v
		}
		for k, v := range tc.dirs {
			spec[k] = v
		}
		if out := call(t, m, "decide", spec, tc.tool, read(tc.path)); out[0] != tc.want {
			t.Errorf("%s: decide compiled = %v, want %v", tc.name, out[0], tc.want)
		}
	}
	if out := call(t, m, "match", "Read(./.env)", "deny", "Read", read("/w/.env"), map[string]any{"cwd": "/w"}); out[0] != true {
		t.Errorf("a rule parsed with a cwd: %v, want a match", out)
	}
	if out, err := m.Call("decide", anchored, "Read", read("/w/.env"), map[string]any{"cwd": "w"}); err == nil || !strings.Contains(err.Error(), `cwd: "w" is not an absolute path`) {
		t.Errorf("a relative cwd: %v %v, want an error", out, err)
	}

	// an unparsable command is never allowed, even with no deny rule
	allowNpm := map[string]any{"allow": []any{"Bash(npm *)"}}
	if out := call(t, m, "decide", allowNpm, "Bash", bashArgs("npm test")); out[0] != "allow" {
		t.Errorf("npm test: %v, want allow", out)
	}
	if out := call(t, m, "decide", allowNpm, "Bash", bashArgs("npm test 'unclosed")); out[0] != nil {
		t.Errorf("an unparsable command: %v, want no decision", out)
	}

	// denies_tool: a deny rule without a specifier
	for name, want := range map[string]bool{"mcp__prod__drop": true, "Bash": false, "Read": false} {
		if out := call(t, m, "denies_tool", ccBlock, name); out[0] != want {
			t.Errorf("denies_tool(%s) = %v, want %v", name, out[0], want)
		}
	}
}

func TestRulesCompileErrors(t *testing.T) {
	m := openRules(t)
	out := call(t, m, "compile", map[string]any{
		"allow":       []any{"Bash(npm *)", "Bash(npm", 7},
		"deny":        []any{"", "Edit([)"},
		"project_dir": "relative/dir",
	})
	if out[0] != nil {
		t.Fatalf("compile = %v, want nil and problems", out)
	}
	msg := out[1].(string)
	if !strings.HasPrefix(msg, "config_invalid: ") {
		t.Errorf("message %q does not start with the code", msg)
	}
	want := []string{"allow[2]: a rule is a string", "allow[1]: permission rule \"Bash(npm\"", "deny[0]: permission rule \"\"", "deny[1]: permission rule \"Edit([)\"", "project_dir: \"relative/dir\" is not an absolute path"}
	problems := strs(out[2])
	if len(problems) != len(want) {
		t.Fatalf("problems = %q, want %d", problems, len(want))
	}
	for _, w := range want {
		found := false
		for _, p := range problems {
			found = found || strings.HasPrefix(p, w)
		}
		if !found {
			t.Errorf("no problem starts with %q in %q", w, problems)
		}
	}
	if out := call(t, m, "compile", map[string]any{"allow": []any{"Read"}}); out[0] != "awaken.rules policy (1 allow, 0 ask, 0 deny)" {
		t.Errorf("compile = %v", out)
	}
	many := make([]any, 4097)
	for i := range many {
		many[i] = "Read"
	}
	if out := call(t, m, "compile", map[string]any{"deny": many}); out[0] != nil || !strings.Contains(out[1].(string), "more than the 4096 rules") {
		t.Errorf("compile of 4097 rules = %v", out)
	}
	for name, want := range map[string]string{
		"unknown_field":  "unknown field defaultMode",
		"not_a_table":    "table expected",
		"write":          "awaken.rules policy (0 allow, 0 ask, 0 deny) is read-only",
		"decide_bool":    "string expected",
		"decide_args":    "a table of arguments expected",
		"behavior":       `"allow", "ask" or "deny" expected`,
		"dot_call":       "userdata expected",
		"rule_as_policy": "a policy from awaken.rules.compile expected",
	} {
		_, err := m.Call("misuse", name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", name, err, want)
		}
	}
}

func TestRulesMatch(t *testing.T) {
	m := openRules(t)
	tests := []struct {
		rule, behavior, name string
		args                 map[string]any
		want                 any
	}{
		// the bug this fixes: a second argument beside the command
		{"Bash(rm *)", "deny", "Bash", map[string]any{"command": "rm -rf /", "description": "clean"}, true},
		{"Bash(rm *)", "deny", "Bash", bashArgs("echo ok && rm -rf /"), true},
		{"Bash(rm *)", "allow", "Bash", bashArgs("echo ok && rm -rf /"), false},
		{"Bash(echo *)", "allow", "Bash", bashArgs("echo ok && rm -rf /"), false},
		{"Bash(echo *)", "deny", "Bash", bashArgs("echo 'unclosed"), true},
		{"Bash(echo *)", "allow", "Bash", bashArgs("echo 'unclosed"), false},
		{"Bash(git diff *)", "allow", "Bash", bashArgs("git diff HEAD~1"), true},
		{"Bash(npm run test:*)", "allow", "Bash", bashArgs("npm run test -- -u"), true},
		{"Bash(npm run test:*)", "allow", "Bash", bashArgs("npm run testx"), false},
		{"Read(./.env)", "deny", "Read", map[string]any{"file_path": "/p/.env"}, true},
		{"Task(*deploy*)", "deny", "Task", map[string]any{"prompt": "please deploy it", "description": "d"}, true},
		{"WebSearch(weather *)", "allow", "WebSearch", map[string]any{"query": "weather today"}, true},
		{"Grep(TODO*)", "allow", "Grep", map[string]any{"pattern": "TODO:", "path": "/p"}, true},
		{"mcp__server__tool", "deny", "mcp__server__tool", nil, true},
		{"mcp__server", "allow", "mcp__server__tool", nil, true},
		{"mcp__db__query(database:prod)", "deny", "mcp__db__query", map[string]any{"database": "prod", "sql": "x"}, true},
		{"mcp__db__query(database:prod)", "deny", "mcp__db__query", map[string]any{"database": "dev"}, false},
	}
	dirs := map[string]any{"project_dir": "/p"}
	for _, tc := range tests {
		out := call(t, m, "match", tc.rule, tc.behavior, tc.name, tc.args, dirs)
		if out[0] != tc.want {
			t.Errorf("%s %s on %s %v = %v, want %v", tc.behavior, tc.rule, tc.name, tc.args, out, tc.want)
		}
	}

	// a specifier is matched against whatever tool the call names
	for _, tc := range []struct {
		spec, behavior, name string
		args                 map[string]any
		want                 any
	}{
		{"rm *", "deny", "Bash", bashArgs("ls; rm x"), true},
		{"rm *", "deny", "run_shell_command", map[string]any{"command": "ls; rm x"}, true},
		{"npm *", "allow", "Bash", bashArgs("npm test; rm x"), false},
		{"*.md", "allow", "Glob", map[string]any{"pattern": "*.md"}, true},
		{"rm *", "deny", "custom_tool", map[string]any{"command": "rm x"}, "unknown"},
	} {
		out := call(t, m, "match_specifier", tc.spec, tc.behavior, tc.name, tc.args)
		if out[0] != tc.want {
			t.Errorf("specifier %s %q on %s = %v, want %v", tc.behavior, tc.spec, tc.name, out, tc.want)
		}
	}

	// the primary-argument table
	for name, want := range map[string][]any{
		"Bash": {"command", "command"}, "Read": {"file_path", "path"}, "MultiEdit": {"file_path", "path"},
		"Glob": {"pattern", "text"}, "WebFetch": {"url", "url"}, "WebSearch": {"query", "text"},
		"Task": {"prompt", "text"}, "custom": {nil},
	} {
		if out := call(t, m, "primary", name); !reflect.DeepEqual(out, want) {
			t.Errorf("primary(%s) = %v, want %v", name, out, want)
		}
	}
}

// A policy compiled by prepare is kept once per config and shared by
// every state; the gate decides from the call itself, its arguments never
// converted to Lua.
const ccGuard = `
local awaken = require("awaken")
local p = awaken.plugin {
  config = {
    allow = { type = "array", items = { type = "string" }, default = {} },
    deny = { type = "array", items = { type = "string" }, default = {} },
  },
  prepare = function(config)
    return { policy = assert(awaken.rules.compile { allow = config.allow, deny = config.deny }) }
  end,
}
p:tool_gate(function(ctx, call)
  local behavior, rule, reason = ctx.prepared.policy:decide(call)
  if behavior == "deny" then return awaken.block(reason) end
  if behavior == nil then return awaken.block("no rule for " .. call.name) end
end)
return p`

func TestRulesPolicyInPrepared(t *testing.T) {
	g := mustLoad(t, map[string]string{"guard.lua": ccGuard}, func(l *luabridge.Loader) { l.PoolSize = 4 })
	configs, err := g.Set.Configure(map[string]any{"guard": map[string]any{
		"allow": []any{"Bash(npm test)"}, "deny": []any{"Bash(rm *)"}}})
	if err != nil {
		t.Fatal(err)
	}
	gate := func(cmd string) (string, error) {
		st, _ := state.NewStore(g.Set.Registry(), nil)
		x, err := engine.New(g.Set).Exec(engine.ExecConfig{Store: st, Configs: configs})
		if err != nil {
			t.Fatal(err)
		}
		res, err := x.Gate(context.Background(), plugin.Input{Configs: configs,
			Tool: &plugin.ToolInfo{Call: model.ToolCall{ID: "c1", Name: "Bash", Args: bashArgs(cmd)}}})
		return res.Decision.Decision.Kind.String() + " " + res.Decision.Reason, err
	}
	done := make(chan error, 4)
	for range 4 {
		go func() {
			for range 10 {
				if got, err := gate("npm test && rm -rf /"); err != nil || !strings.HasPrefix(got, "block Bash denied by the permission rule \"Bash(rm *)\"") {
					done <- fmt.Errorf("npm test && rm -rf /: %q, %v", got, err)
					return
				}
				if got, err := gate("npm test"); err != nil || !strings.HasPrefix(got, "allow") {
					done <- fmt.Errorf("npm test: %q, %v", got, err)
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}

	// a policy is shared through prepare only: it is no value to store
	m := openRules(t)
	if out := call(t, m, "encoded"); out[0] != nil || !strings.Contains(fmt.Sprint(out[1]), "awaken.rules policy (0 allow, 0 ask, 0 deny) cannot be stored") {
		t.Errorf("a policy as a value: %v", out)
	}
}

// list reads a converted Lua list: an empty table converts to an empty
// object.
func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return nil
}

// FuzzShellSplitLua checks the conversion of awaken.shell.split: for any
// command, Lua gets what shell.Split gives Go (the same commands, words,
// literalness, parents) or nil and the same error.
func FuzzShellSplitLua(f *testing.F) {
	for _, s := range []string{
		"echo ok && rm -rf /", "$(rm -rf /)", "echo `rm x`", "(cd /; rm x)", "bash -c 'rm -rf /'",
		"sudo -u root env A=1 rm x", "FOO=1 rm $X > out 2>&1", "{ a; b; } > log", "rm 'x", "",
		"find . -exec rm {} ;", "xargs -n1 rm", "eval \"rm $X\"", "cat <<E\n$(rm x)\nE",
	} {
		f.Add(s)
	}
	var m *luabridge.Module
	defer func() {
		if m != nil {
			m.Close()
		}
	}()
	f.Fuzz(func(t *testing.T, cmd string) {
		want, werr := shell.Split(cmd)
		// The hook budget is wall-clock time: a busy machine (the
		// fuzzer's own workers, -race) can stop a call that is not slow,
		// so a timeout is retried on a fresh module, and only three in a
		// row fail.
		var out []any
		var err error
		for range 3 {
			if m == nil {
				if m, err = luabridge.OpenModule(luabridge.Source{FS: fstest.MapFS{"r.lua": {Data: []byte(rulesModule)}}, Name: "t"}, "r", luabridge.Limits{}); err != nil {
					t.Fatal(err)
				}
			}
			if out, err = m.Call("split", cmd); err == nil || !strings.HasPrefix(err.Error(), "hook_timeout") {
				break
			}
			m.Close()
			m = nil
		}
		if err != nil {
			t.Fatalf("split(%q): %v", cmd, err)
		}
		if werr != nil {
			if out[0] != nil || len(out) < 2 || out[1] != werr.Error() {
				t.Fatalf("split(%q) = %v, want nil, %q", cmd, out, werr)
			}
			return
		}
		got := list(out[0])
		if len(got) != len(want) {
			t.Fatalf("split(%q): %d commands, want %d", cmd, len(got), len(want))
		}
		for i, w := range want {
			c := got[i].(map[string]any)
			argv, literal := list(c["argv"]), list(c["literal"])
			if len(argv) != len(w.Words) || len(literal) != len(w.Words) {
				t.Fatalf("split(%q)[%d]: %d words, want %d", cmd, i, len(argv), len(w.Words))
			}
			for j, word := range w.Words {
				if argv[j] != word.Value || literal[j] != word.Literal {
					t.Fatalf("split(%q)[%d] word %d = %v %v, want %+v", cmd, i, j, argv[j], literal[j], word)
				}
			}
			parent, _ := c["parent"].(float64)
			if int(parent)-1 != w.Parent || c["via"] != w.Via.String() || c["text"] != w.Text || c["line"] != w.Line() || c["dynamic"] != w.Dynamic {
				t.Fatalf("split(%q)[%d] = %v, want %+v", cmd, i, c, w)
			}
		}
	})
}
