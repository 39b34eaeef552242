package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// awaken runs the command line in process.
func awaken(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// normalize replaces what changes from run to run (random ids) so a trace
// can be compared with a golden file.
func normalize(s string) string {
	s = regexp.MustCompile(`run_[0-9a-f]{16}`).ReplaceAllString(s, "run_ID")
	s = regexp.MustCompile(`thread_[0-9a-f]{16}`).ReplaceAllString(s, "thread_ID")
	s = regexp.MustCompile(`"ts":"[^"]+"`).ReplaceAllString(s, `"ts":"TS"`)
	s = regexp.MustCompile(`"duration_ms":[0-9.e+-]+`).ReplaceAllString(s, `"duration_ms":D`)
	s = regexp.MustCompile(` in [0-9.]+(µs|ms|s)\b`).ReplaceAllString(s, " in D")
	return s
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs from the golden file (run with -update if the change is intended):\n%s", name, got)
	}
}

const demoConfig = "../../awaken.toml"

func TestDemoRunTrace(t *testing.T) {
	code, out, errOut := awaken(t, "", "--config", demoConfig, "run", "Why does reserving too many items fail with 500?")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "demo.trace.golden", normalize(out))
}

func TestDemoRunJSON(t *testing.T) {
	code, out, errOut := awaken(t, "", "--config", demoConfig, "run", "--json", "hi")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var names []string
	for _, l := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("not one JSON object per line: %q", l)
		}
		names = append(names, ev["event"].(string))
	}
	if names[0] != "run_start" || names[len(names)-1] != "run_finish" || !strings.Contains(strings.Join(names, ","), "gate_decision") {
		t.Fatalf("events %v", names)
	}
	golden(t, "demo.json.golden", normalize(out))
}

// project writes a throwaway project: awaken.toml, plugins and a script.
func project(t *testing.T, toml string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{"awaken.toml": toml}
	for k, v := range files {
		all[k] = v
	}
	for name, src := range all {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const gatePlugin = `local awaken = require("awaken")
local p = awaken.plugin {}
p:tool { id = "deploy", description = "deploys", execute = function(ctx, args) return awaken.success("deployed") end }
p:tool_gate(function(ctx, call)
  if call.name == "deploy" and not call.resume then return awaken.suspend { message = "deploy to prod?" } end
end)
return p
`

func TestRunExitCodes(t *testing.T) {
	toml := "[model]\nscript = \"script.toml\"\n[agents.default]\ntools = []\n"
	t.Run("waiting", func(t *testing.T) {
		dir := project(t, toml, map[string]string{
			"scripts/ask.lua": gatePlugin,
			"script.toml":     "[[turns]]\n[[turns.tool_calls]]\nname = \"deploy\"\n[[turns]]\ntext = \"done\"\n",
		})
		code, _, errOut := awaken(t, "", "--config", filepath.Join(dir, "awaken.toml"), "run", "deploy")
		if code != exitWaiting || !strings.Contains(errOut, "deploy to prod?") || !strings.Contains(errOut, "ticket_call_1_1") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !strings.Contains(errOut, "the memory store forgets this run") {
			t.Fatalf("the hint must say the memory store cannot answer later: %s", errOut)
		}
		code, out, errOut := awaken(t, "", "--config", filepath.Join(dir, "awaken.toml"), "run", "--approve", "none", "deploy")
		if code != exitOK || !strings.Contains(out, "cancelled") || !strings.Contains(out, "finish natural") {
			t.Fatalf("--approve none: exit %d\n%s%s", code, out, errOut)
		}
	})
	t.Run("error", func(t *testing.T) {
		dir := project(t, toml, map[string]string{"script.toml": "[[turns]]\n[[turns.tool_calls]]\nname = \"x\"\n"})
		code, out, errOut := awaken(t, "", "--config", filepath.Join(dir, "awaken.toml"), "run")
		if code != exitFailed || !strings.Contains(out, "error:model_failed") || !strings.Contains(errOut, "model_failed") {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		dir := project(t, "[runtime]\nmax_stepz = 3\n", nil)
		code, _, errOut := awaken(t, "", "--config", filepath.Join(dir, "awaken.toml"), "run")
		if code != exitUsage || !strings.Contains(errOut, "awaken.toml:2") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	t.Run("bad usage", func(t *testing.T) {
		if code, _, _ := awaken(t, "", "rn"); code != exitUsage {
			t.Fatalf("exit %d", code)
		}
		if code, _, _ := awaken(t, "", "run", "--approve", "maybe"); code != exitUsage {
			t.Fatalf("exit %d", code)
		}
	})
}

// TestRefusedRunWritesNothing: a run refused for what it needs (no model,
// a bad --model or --agent, a plugin directory that is not there) leaves
// no audit file, store or journal behind.
func TestRefusedRunWritesNothing(t *testing.T) {
	toml := "[audit]\npath = \"logs/audit.jsonl\"\n[store]\nkind = \"file\"\npath = \"st\"\n[journal]\npath = \"journal\"\n"
	for _, tc := range []struct {
		top  string // before toml's tables
		args []string
	}{
		{"", []string{"run", "hi"}},
		{"", []string{"run", "--model", "scripted:nosuch.toml", "hi"}},
		{"", []string{"run", "--model", "bogus", "hi"}},
		{"", []string{"run", "--model", "scripted:script.toml", "--agent", "nosuch", "hi"}},
		// The model found (a path from here), the plugins not.
		{"plugin_dir = \"nope\"\n", []string{"run", "--model", "SCRIPT", "hi"}},
	} {
		dir := project(t, tc.top+toml, map[string]string{"script.toml": "[[turns]]\ntext = \"done\"\n"})
		args := slices.Clone(tc.args)
		if i := slices.Index(args, "SCRIPT"); i >= 0 {
			args[i] = "scripted:" + filepath.Join(dir, "script.toml")
		}
		code, out, errOut := awaken(t, "", append([]string{"--config", filepath.Join(dir, "awaken.toml")}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "config_invalid") {
			t.Errorf("%v: exit %d, want 2 and the reason\n%s%s", args, code, out, errOut)
		}
		left, _ := os.ReadDir(dir)
		if len(left) != 2 {
			var names []string
			for _, f := range left {
				names = append(names, f.Name())
			}
			t.Errorf("%v: a refused run left %v behind", args, names)
		}
	}
}

func TestTestCommand(t *testing.T) {
	dir := project(t, "", map[string]string{
		"scripts/ask.lua": gatePlugin,
		"scripts/ask_test.lua": `local t = require("awaken.testing")
t.test("deploy is asked", function()
  local h = t.harness { plugins = { "ask" } }
  t.eq(h:gate { name = "deploy" }.decision, "allow")
end)
`,
	})
	code, out, _ := awaken(t, "", "--config", filepath.Join(dir, "awaken.toml"), "test")
	if code != exitFailed || !strings.HasSuffix(out, "0 passed, 1 failed\n") || !strings.Contains(out, "scripts/ask_test.lua:4: t.eq") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, out, _ = awaken(t, "", "--config", "../../awaken.toml", "test", "../../scripts")
	if code != exitOK || !strings.Contains(out, " passed, 0 failed") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// A bad argument of test or eval is config_invalid, as a bad --model or
// --agent is, with a message that says what to give instead; exit 2.
func TestBadArgumentsHaveCodes(t *testing.T) {
	dir := project(t, "", map[string]string{"scripts/ask.lua": gatePlugin})
	cfg := filepath.Join(dir, "awaken.toml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"test", filepath.Join(dir, "scripts", "nope_test.lua")}, "config_invalid: test path " + filepath.Join(dir, "scripts", "nope_test.lua") +
			": no such file or directory; name *_test.lua files"},
		{[]string{"test", cfg}, "config_invalid: test path " + cfg + ": not a test file; name *_test.lua files"},
		{[]string{"eval", "deploy", "{"}, `config_invalid: ARGS-JSON { is not JSON (unexpected end of JSON input); give the call's arguments as one JSON object`},
		{[]string{"eval", "deploy", "[1]"}, `config_invalid: ARGS-JSON [1] is not a JSON object; give the call's arguments as one, such as '{"path": "src/main.go"}'`},
	} {
		code, out, errOut := awaken(t, "", append([]string{"--config", cfg}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, tc.want) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want it to start %q)", tc.args, code, exitUsage, out, errOut, tc.want)
		}
	}
}

// test prints a plugin that fails to load as check and dev do, position
// first; t.raises still sees the code first.
func TestTestPrintsLoadErrorsAsCheckDoes(t *testing.T) {
	const bad = "local awaken = require(\"awaken\")\nlocal p = awaken.plugin {}\np:on(\"after_tool_exec\", function() end)\nreturn p\n"
	const want = `scripts/bad.lua:3: plugin_load_failed: p:on: unknown phase "after_tool_exec" (did you mean "after_tool_execute"?)`
	for _, tc := range []struct{ name, test string }{
		{"in a test", "local t = require(\"awaken.testing\")\nt.test(\"loads\", function() t.harness { plugins = { \"bad\" } } end)\n"},
		{"at the top of the file", "local t = require(\"awaken.testing\")\nlocal h = t.harness { plugins = { \"bad\" } }\nt.test(\"x\", function() end)\n"},
		{"caught by t.raises", "local t = require(\"awaken.testing\")\nt.test(\"x\", function()\n" +
			"  t.raises(function() t.harness { plugins = { \"bad\" } } end, \"^plugin_load_failed: p:on: unknown phase\")\nend)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, "", map[string]string{"scripts/bad.lua": bad, "scripts/bad_test.lua": tc.test})
			cfg := filepath.Join(dir, "awaken.toml")
			code, out, errOut := awaken(t, "", "--config", cfg, "test")
			if tc.name == "caught by t.raises" {
				if code != exitOK {
					t.Fatalf("exit %d:\n%s%s", code, out, errOut)
				}
				return
			}
			if code != exitFailed || !strings.Contains(out, "\n  "+want) || strings.Contains(out, "(at ") {
				t.Fatalf("exit %d, want a line starting %q:\n%s%s", code, want, out, errOut)
			}
			if _, checkOut, _ := awaken(t, "", "--config", cfg, "check"); !strings.Contains(checkOut, want) {
				t.Fatalf("check prints it otherwise:\n%s", checkOut)
			}
		})
	}
}

// eval of a tool the agent does not have says so on stderr and still
// prints the plugins' decision; an agent without tools (they come from
// its host) gets no warning.
func TestEvalWarnsOfToolsTheAgentLacks(t *testing.T) {
	dir := project(t, "[tools]\nroot = \".\"\n[agents.default]\ntools = [\"fs_read\", \"fs_list\"]\n[agents.hooked]\ntools = []\n",
		map[string]string{"scripts/ask.lua": gatePlugin})
	cfg := filepath.Join(dir, "awaken.toml")
	for _, tc := range []struct {
		args      []string
		code      int
		out, warn string
	}{
		{[]string{"fs_read"}, exitOK, "allow\n", ""},
		{[]string{"fs_raed"}, exitOK, "allow\n",
			`warning: agent "default" has no tool "fs_raed" (did you mean "fs_read"?) (its tools: deploy, fs_list, fs_read); the plugins decided the call all the same`},
		{[]string{"nosuchtool"}, exitOK, "allow\n", `warning: agent "default" has no tool "nosuchtool" (its tools: deploy, fs_list, fs_read)`},
		{[]string{"deploy"}, exitFailed, "suspend by ask", ""}, // the plugin's tool, which every agent has
		{[]string{"--agent", "hooked", "Bash"}, exitOK, "allow\n", ""},
	} {
		code, out, errOut := awaken(t, "", append([]string{"--config", cfg, "eval"}, tc.args...)...)
		if code != tc.code || !strings.HasPrefix(out, tc.out) || (tc.warn == "") != (errOut == "") || !strings.HasPrefix(errOut, tc.warn) {
			t.Errorf("eval %v: exit %d (want %d), stdout %q, stderr %q (want %q)", tc.args, code, tc.code, out, errOut, tc.warn)
		}
	}
}

func TestCheckReportsEveryKindOfMistake(t *testing.T) {
	dir := project(t, "[agents.default]\ntools = []\nplugns = []\n", map[string]string{
		"scripts/syntax.lua": "local awaken = require('awaken'\nreturn 1\n",
		"scripts/phase.lua":  "local awaken = require('awaken')\nlocal p = awaken.plugin {}\np:on('step_strat', function() end)\nreturn p\n",
		"scripts/a.lua":      "local awaken = require('awaken')\nlocal p = awaken.plugin {}\np:key('shared.k', {})\nreturn p\n",
		"scripts/b.lua":      "local awaken = require('awaken')\nlocal p = awaken.plugin {}\np:key('shared.k', {})\nreturn p\n",
	})
	code, out, _ := awaken(t, "", "--config", filepath.Join(dir, "awaken.toml"), "check")
	if code != exitFailed {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		`awaken.toml:3: config_invalid: unknown key "agents.default.plugns"`,
		"scripts/syntax.lua:2",
		`scripts/phase.lua:3: plugin_load_failed`,
		`key_already_registered`,
		"4 problems:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

func TestCheckDescribesPlugins(t *testing.T) {
	code, out, _ := awaken(t, "", "--config", demoConfig, "check")
	if code != exitOK || !strings.Contains(out, "plugin guard (scripts/guard.lua)") || !strings.Contains(out, "hooks:   after_tool_execute, tool_gate") ||
		!strings.Contains(out, `plugin_dir = "scripts"`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// The effective configuration shows the plugins' schema defaults: guard
	// is not configured in awaken.toml, budget's warn_at is left out.
	for _, want := range []string{"[plugins.guard]\nsecrets = [\".env\", \"*.pem\", \"**/id_rsa\"]", "warn_at = 0.8"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the effective configuration:\n%s", want, out)
		}
	}
}

func TestVersion(t *testing.T) {
	if code, out, _ := awaken(t, "", "version"); code != exitOK || !strings.HasPrefix(out, "awaken-lua ") {
		t.Fatalf("%d %q", code, out)
	}
}

// syncBuffer is a buffer the dev loop writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDevPrintsOneLinePerGeneration(t *testing.T) {
	plugin := "local awaken = require('awaken')\nlocal p = awaken.plugin {}\np:on('step_start', function() end)\nreturn p\n"
	dir := project(t, "", map[string]string{
		"scripts/a.lua":      plugin,
		"scripts/b.lua":      plugin,
		"scripts/a_test.lua": "local t = require('awaken.testing')\nt.test('loads', function() t.harness { plugins = { 'a' } } end)\n",
	})
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli(ctx, []string{"--config", filepath.Join(dir, "awaken.toml"), "dev"}, strings.NewReader(""), out, out)
	}()
	waitFor := func(want string, again func()) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		last := time.Now()
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q within 20s:\n%s", want, out.String())
			}
			time.Sleep(20 * time.Millisecond)
			// The watcher may have started after the first write: save
			// again now and then, slower than the debounce.
			if again != nil && time.Since(last) > time.Second {
				again()
				last = time.Now()
			}
		}
	}
	waitFor("g1 loaded (2 plugins", nil)
	waitFor("1 passed, 0 failed", nil)
	broken := "local awaken = require('awaken')\nlocal p = awaken.plugin {}\np:on('step_strat', function() end)\nreturn p\n"
	writeFile := func(src string) func() {
		return func() { os.WriteFile(filepath.Join(dir, "scripts", "a.lua"), []byte(src), 0o644) }
	}
	writeFile(broken)()
	waitFor("reload failed; g1 stays current", writeFile(broken))
	waitFor("scripts/a.lua:3", nil)
	// The fix brings the files back to what g1 loaded: said, not silent.
	writeFile(plugin)()
	waitFor("g1 is current again", writeFile(plugin))
	// A test file saved re-runs the tests.
	testFile := filepath.Join(dir, "scripts", "a_test.lua")
	failing := "local t = require('awaken.testing')\nt.test('loads', function() t.harness { plugins = { 'a' } } end)\nt.test('fails', function() t.eq(1, 2) end)\n"
	saveTest := func() { os.WriteFile(testFile, []byte(failing), 0o644) }
	saveTest()
	waitFor("1 passed, 1 failed", saveTest)
	writeFile(plugin + "-- changed\n")()
	waitFor("g2 loaded", writeFile(plugin+"-- changed\n"))
	// A deleted plugin file loads a generation without it, and says so.
	if err := os.Remove(filepath.Join(dir, "scripts", "b.lua")); err != nil {
		t.Fatal(err)
	}
	waitFor("g3 loaded (1 plugin", nil)
	waitFor("  removed: b (their files are gone", nil)
	// The plugin directory moved away is a failed reload.
	if err := os.Rename(filepath.Join(dir, "scripts"), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	waitFor("reload failed; g3 stays current", nil)
	waitFor("plugin_dir: the plugin directory", nil)
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("dev exited %d", code)
	}
}

// The README's configuration examples for the standard plugins load: the
// file parses and every plugin config fits its plugin's schema.
func TestReadmeExamplesLoad(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(readme)
	section := doc[strings.Index(doc, "## Standard plugins"):strings.Index(doc, "## Development")]
	blocks := regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) < 6 {
		t.Fatalf("found %d TOML examples", len(blocks))
	}
	var all strings.Builder
	for _, b := range blocks {
		all.WriteString(b[1])
		all.WriteString("\n")
	}
	dir := project(t, all.String(), nil)
	code, out, errOut := awaken(t, "", "--config", filepath.Join(dir, "awaken.toml"), "check")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
}

// TestCheckReportsWhatRunRefuses runs check on each project of
// testdata/check/ (in place: check writes nothing) and compares its output
// with testdata/check/NAME.golden; then runs `run` (or the command of
// refusedBy) on a copy of the project, which must refuse it, with problems
// that check reported at the same awaken.toml line and key.
func TestCheckReportsWhatRunRefuses(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "check", "*", "awaken.toml"))
	if err != nil || len(cases) < 10 {
		t.Fatalf("found %d check cases (%v)", len(cases), err)
	}
	// Only serve opens the [shadow] candidate.
	refusedBy := map[string][]string{"shadow_dir_missing": {"serve", "--addr", "127.0.0.1:0"}}
	// "awaken.toml:12: config_invalid: audit.path:": where, what and which
	// key, without the message (run meets the real error; check probes).
	problem := regexp.MustCompile(`awaken\.toml:\d+: [a-z_]+: [a-z_.]+:`)
	for _, cfg := range cases {
		dir := filepath.Dir(cfg)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			code, out, errOut := awaken(t, "", "--config", cfg, "check")
			if code != exitFailed {
				t.Errorf("check: exit %d, want %d\n%s%s", code, exitFailed, out, errOut)
			}
			golden(t, filepath.Join("check", name+".golden"), out)
			reported := problem.FindAllString(out, -1)
			if len(reported) == 0 {
				t.Fatalf("check reported no problem with awaken.toml:line, key:\n%s", out)
			}

			tmp := t.TempDir()
			if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			args := refusedBy[name]
			if args == nil {
				args = []string{"run", "hi"}
			}
			// A command that accepts the project would run until the
			// context ends (serve): the test fails then, without hanging.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var stdout, stderr syncBuffer
			code = cli(ctx, append([]string{"--config", filepath.Join(tmp, "awaken.toml")}, args...), strings.NewReader(""), &stdout, &stderr)
			out, errOut = stdout.String(), stderr.String()
			if code == exitOK {
				t.Fatalf("%s accepted what check refused:\n%s%s", args[0], out, errOut)
			}
			refused := problem.FindAllString(errOut, -1)
			if len(refused) == 0 {
				t.Fatalf("%s: exit %d without awaken.toml:line, key:\n%s", args[0], code, errOut)
			}
			for _, p := range refused {
				if !slices.Contains(reported, p) {
					t.Errorf("%s refused %q, which check did not report (check reported %q)", args[0], p, reported)
				}
			}
		})
	}
}

// check validates [journal] and [shadow] as run and serve do, prints them
// in the effective configuration, and leaves no journal behind.
func TestCheckJournalAndShadow(t *testing.T) {
	const allow = "local awaken = require('awaken')\nlocal p = awaken.plugin {}\np:tool_gate(function() end)\nreturn p\n"
	base := "[model]\nscript = \"script.toml\"\n[audit]\npath = \"\"\n"
	script := map[string]string{"script.toml": "[[turns]]\ntext = \"done\"\n"}
	with := func(files map[string]string) map[string]string {
		all := map[string]string{}
		for k, v := range script {
			all[k] = v
		}
		for k, v := range files {
			all[k] = v
		}
		return all
	}
	for _, c := range []struct {
		name, toml string
		files      map[string]string
		code       int
		want       []string
	}{
		{"journal", base + "[journal]\npath = \"state/journal\"\nmask = [\"password\"]\n", script, exitOK,
			[]string{"[journal]\nkind = \"file\"\npath = \"state/journal\"\nmax_file_size = \"64MiB\"\nmax_age = \"720h\"\nmask = [\"password\"]\n",
				"[shadow]  # off"}},
		{"journal off", base, script, exitOK, []string{"[journal]\nkind = \"file\"\npath = \"\"  # empty: no journal\n"}},
		{"shadow", base + "[shadow]\nplugin_dir = \"candidate\"\n", with(map[string]string{"candidate/allow.lua": allow}), exitOK,
			[]string{"shadow candidate candidate loads: allow\n", "[shadow]\nplugin_dir = \"candidate\"\nconfig = \"\"  # empty: the candidate reads this file\n"}},
		{"shadow plugin broken", base + "[shadow]\nplugin_dir = \"candidate\"\n",
			with(map[string]string{"candidate/allow.lua": "local awaken = require('awaken')\nlocal p = awaken.plugin {}\np:on('step_strat', function() end)\nreturn p\n"}),
			exitFailed, []string{"candidate/allow.lua:3: plugin_load_failed"}},
		{"shadow config bad", base + "[shadow]\nplugin_dir = \"candidate\"\nconfig = \"candidate.toml\"\n",
			with(map[string]string{"candidate/allow.lua": allow, "candidate.toml": "[runtime]\nmax_stepz = 3\n"}),
			exitFailed, []string{`candidate.toml:2: config_invalid: unknown key "runtime.max_stepz"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := project(t, c.toml, c.files)
			code, out, errOut := awaken(t, "", "--config", filepath.Join(dir, "awaken.toml"), "check")
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s%s", code, c.code, out, errOut)
			}
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "state")); !os.IsNotExist(err) {
				t.Errorf("check made the journal's directory (%v)", err)
			}
		})
	}
	// The repository's own awaken.toml sets [journal] path.
	code, out, _ := awaken(t, "", "--config", demoConfig, "check")
	if want := "[journal]\nkind = \"file\"\npath = \".awaken/journal\"\n"; code != exitOK || !strings.Contains(out, want) {
		t.Fatalf("exit %d, no %q:\n%s", code, want, out)
	}
}

// A project without a model script (a sidecar's) passes check, with a
// note, and only run, which needs a model, refuses it: at the line of
// [model] script when the file writes it, else saying what to add, and
// never naming a script the user did not write.
func TestNoModelScript(t *testing.T) {
	const sidecar = "[server]\naddr = \"127.0.0.1:7879\"\n\n[agents.claude-code]\ntools = []\n\n[plugins.permission]\ndefault = \"ask\"\n"
	for _, c := range []struct {
		name, toml string
		runErr     string // what run says, with its place
	}{
		{"no [model]", sidecar, `awaken.toml: config_invalid: model.script: run needs a model and none is configured; add [model] script = `},
		{"[model] without script", "[audit]\npath = \"\"\n[model]\nkind = \"scripted\"\n",
			`awaken.toml:3: config_invalid: model.script: run needs a model and none is configured; add [model] script = `},
		{"script empty", "[audit]\npath = \"\"\n[model]\nscript = \"\"\n", `awaken.toml:4: config_invalid: model.script: is empty, and run needs a model; `},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := project(t, c.toml, nil)
			cfg := filepath.Join(dir, "awaken.toml")
			code, out, errOut := awaken(t, "", "--config", cfg, "check")
			if code != exitOK || !strings.Contains(out, "note: no model script: run needs one") || !strings.Contains(out, "\nscript = \"\"  # empty: no script") {
				t.Fatalf("check: exit %d:\n%s%s", code, out, errOut)
			}
			code, out, errOut = awaken(t, "", "--config", cfg, "run", "hi")
			if code != exitUsage || !strings.Contains(errOut, c.runErr) {
				t.Fatalf("run: exit %d, want %d with %q:\n%s%s", code, exitUsage, c.runErr, out, errOut)
			}
			if all := out + errOut; strings.Contains(all, "testdata/scenarios") {
				t.Fatalf("names a script the project does not have:\n%s", all)
			}
			// A script given on the command line is enough.
			if err := os.WriteFile(filepath.Join(dir, "s.toml"), []byte("[[turns]]\ntext = \"done\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut = awaken(t, "", "--config", cfg, "run", "--model", "scripted:"+filepath.Join(dir, "s.toml"), "hi")
			if code != exitOK || !strings.Contains(out, "finish natural") {
				t.Fatalf("run --model: exit %d:\n%s%s", code, out, errOut)
			}
		})
	}
}

// serve, run and dev refuse to start without their plugin directory: a
// policy that is not there must not be served as "allow everything".
func TestStartWithoutPluginDir(t *testing.T) {
	dir := project(t, "plugin_dir = \"policies\"\n[model]\nscript = \"script.toml\"\n[audit]\npath = \"\"\n",
		map[string]string{"script.toml": "[[turns]]\ntext = \"done\"\n"})
	cfg := filepath.Join(dir, "awaken.toml")
	for _, args := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"run", "hi"}, {"dev"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out, errOut syncBuffer
		code := cli(ctx, append([]string{"--config", cfg}, args...), strings.NewReader(""), &out, &errOut)
		cancel()
		if code != exitUsage || !strings.Contains(errOut.String(), "awaken.toml:1: config_invalid: plugin_dir: the plugin directory") {
			t.Errorf("%s: exit %d, want %d with plugin_dir at awaken.toml:1:\n%s%s", args[0], code, exitUsage, out.String(), errOut.String())
		}
	}
}

// TestPluginThatDoesNotLoad: a plugin whose code fails to load is the
// work failing (exit 1), as a failing test is, in every command that
// loads plugins; configuration (awaken.toml, flags) is exit 2. The
// README and help run say so.
func TestPluginThatDoesNotLoad(t *testing.T) {
	dir := project(t, "[model]\nscript = \"script.toml\"\n[audit]\npath = \"\"\n", map[string]string{
		"script.toml":        "[[turns]]\ntext = \"done\"\n",
		"scripts/broken.lua": "local awaken = require('awaken')\nlocal p = awaken.plugin {}\np:on('step_strat', function() end)\nreturn p\n",
	})
	cfg := filepath.Join(dir, "awaken.toml")
	for _, args := range [][]string{{"run", "hi"}, {"eval", "fs_read"}, {"serve", "--addr", "127.0.0.1:0"}, {"dev"}, {"check"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out, errOut syncBuffer
		code := cli(ctx, append([]string{"--config", cfg}, args...), strings.NewReader(""), &out, &errOut)
		cancel()
		if code != exitFailed || !strings.Contains(out.String()+errOut.String(), "scripts/broken.lua:3: plugin_load_failed") {
			t.Errorf("%s: exit %d, want %d with the plugin's file:line:\n%s%s", args[0], code, exitFailed, out.String(), errOut.String())
		}
	}
	_, help, _ := awaken(t, "", "help", "run")
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if !strings.Contains(flat(help), "1 it ended in error (error:<code>) or a plugin did not load") {
		t.Errorf("help run does not say a plugin that does not load is exit 1:\n%s", help)
	}
	if !strings.Contains(flat(string(b)), "1 for `error:<code>` and for a plugin that does not load") {
		t.Error("the README's exit codes do not say a plugin that does not load is exit 1 for run")
	}
}

// eval --cwd runs the call in the agent's working directory: a pasted
// Claude Code Read(./.env) denies that directory's .env and no other,
// and a relative --cwd names a directory from where eval runs.
func TestEvalCwd(t *testing.T) {
	dir := project(t, "[agents.default]\ntools = []\n[plugins.permission]\ndefault = \"allow\"\n[plugins.permission.claude_code]\ndeny = [\"Read(./.env)\"]\n", nil)
	cfg := filepath.Join(dir, "awaken.toml")
	env := `{"file_path": "` + filepath.Join(dir, ".env") + `"}`
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--cwd", dir, "Read", env}, exitFailed, `block by permission: Read is denied by the permission rule "Read(./.env)"`},
		{[]string{"--cwd", filepath.Join(dir, "api"), "Read", env}, exitOK, "allow\n"},
		// From dir (t.Chdir below): dir/api, whose own .env alone is denied.
		{[]string{"--cwd", "api", "Read", env}, exitOK, "allow\n"},
		{[]string{"--cwd", "api", "Read", `{"file_path": "` + filepath.Join(dir, "api", ".env") + `"}`}, exitFailed, "block by permission"},
	} {
		if !filepath.IsAbs(tc.args[1]) {
			t.Chdir(dir)
		}
		code, out, errOut := awaken(t, "", append([]string{"--config", cfg, "eval"}, tc.args...)...)
		if code != tc.code || !strings.HasPrefix(out, tc.out) {
			t.Errorf("eval %v: exit %d (want %d), stdout %q, stderr %q", tc.args, code, tc.code, out, errOut)
		}
	}
}
