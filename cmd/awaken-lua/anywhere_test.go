package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBinaryInAnEmptyDirectory runs the command as a user who just
// installed it: in an empty directory, without an awaken.toml.
func TestBinaryInAnEmptyDirectory(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runChild(t, dir, nil, nil, "run", "Why does reserving fail?")
	if code != 0 || !strings.Contains(out, "finish natural") || !strings.Contains(errOut, "built-in demo") {
		t.Fatalf("run: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("run left %v behind", left)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "usage: awaken-lua"},
		{[]string{"-h"}, "usage: awaken-lua"},
		{[]string{"help"}, "usage: awaken-lua"},
		{[]string{"help", "run"}, "Exit codes: 0"},
		{[]string{"run", "--help"}, "usage: awaken-lua run [flags] [PROMPT]"},
		{[]string{"install", "-h"}, "usage: awaken-lua install [flags] AGENT"},
		{[]string{"--version"}, "awaken-lua "},
		{[]string{"version"}, "awaken-lua "},
	} {
		out, errOut, code := runChild(t, dir, nil, nil, tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want %q on stdout)", tc.args, code, out, errOut, tc.want)
		}
	}
	for _, args := range [][]string{{"rnu"}, {"help", "rnu"}, {}} {
		if _, errOut, code := runChild(t, dir, nil, nil, args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, code, errOut)
		}
	}
	out, _, code = runChild(t, dir, nil, nil, "check")
	if code != 0 || !strings.Contains(out, "plugin guard") {
		t.Fatalf("check on the built-in default: exit %d %s", code, out)
	}
}

// TestTestRunMatchingNothingFails: a -run filter that matches no test is
// a failure that says so, not a green "0 passed".
func TestTestRunMatchingNothingFails(t *testing.T) {
	_, errOut, code := runChild(t, "", nil, nil, "--config", "../../awaken.toml", "test", "-run", "no such test")
	if code != 1 || !strings.Contains(errOut, `-run "no such test" matches no test`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if out, errOut, code := runChild(t, "", nil, nil, "--config", "../../awaken.toml", "test", "-run", "secrets"); code != 0 {
		t.Fatalf("a matching filter: exit %d %s %s", code, out, errOut)
	}
}

// TestTestNoTestFiles: a plugin directory without a *_test.lua fails and
// says where tests go, rather than "no tests ran in 0 file(s)".
func TestTestNoTestFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "awaken.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runChild(t, dir, nil, nil, "test")
	if code != 1 || !strings.Contains(errOut, "no *_test.lua file in scripts") || !strings.Contains(errOut, "write one beside the plugin") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// TestEval gates one call like opa eval: the decision on stdout, exit 0
// for allow and 1 otherwise, JSON with --json, nothing left behind.
func TestEval(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"eval", "fs_read", `{"path": ".env"}`}, 1, "set_result by guard: error: guard: .env holds secrets"},
		{[]string{"eval", "fs_read", `{"path": "src/main.go"}`}, 0, "allow"},
		{[]string{"eval", "fs_list"}, 0, "allow"},
		{[]string{"eval", "--json", "fs_read", `{"path": ".env"}`}, 1, `"decision":"set_result"`},
		{[]string{"eval", "fs_read", `[1]`}, 2, ""},
		{[]string{"eval", "fs_read", `{`}, 2, ""},
		{[]string{"eval"}, 2, ""},
	} {
		out, errOut, code := runChild(t, dir, nil, nil, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q", tc.args, code, tc.code, out, errOut)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("eval left %v behind", left)
	}
}

// init names a file that is in the way of its directory, and writes
// nothing: exit 2, as for any argument that cannot be used.
func TestInitIntoAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notes")
	os.WriteFile(file, []byte("mine\n"), 0o644)
	code, out, errOut := awaken(t, "", "init", file)
	if code != exitUsage || !strings.Contains(errOut, "is a file, not a directory") || out != "" {
		t.Fatalf("init FILE: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestInitMakesAWorkingProject: init writes a project whose tests pass at
// once, whose run works and whose dev loads; a second init writes nothing.
func TestInitMakesAWorkingProject(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "proj")
	out, errOut, code := runChild(t, "", nil, nil, "init", dir)
	if code != 0 || !strings.Contains(out, "scripts/policy_test.lua") || !strings.Contains(out, "types/awaken.lua") {
		t.Fatalf("init: exit %d %s %s", code, out, errOut)
	}
	for _, f := range []string{"awaken.toml", "scenario.toml", ".luarc.json", "scripts/policy.lua", "types/testing.lua"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("init wrote no %s: %v", f, err)
		}
	}
	if out, errOut, code := runChild(t, dir, nil, nil, "test"); code != 0 || !strings.Contains(out, "4 passed, 0 failed") {
		t.Fatalf("test in the new project: exit %d %s %s", code, out, errOut)
	}
	// The gate line names the plugin once: "block by policy: <reason>".
	if out, errOut, code := runChild(t, dir, nil, nil, "run", "tidy up"); code != 0 ||
		!strings.Contains(out, "block by policy: notes/todo.md is not writable; write under docs/**\n") ||
		!strings.Contains(out, "finish blocked:notes/todo.md is not writable") {
		t.Fatalf("run in the new project: exit %d %s %s", code, out, errOut)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "scripts", "policy.lua"))
	os.WriteFile(filepath.Join(dir, "scripts", "policy.lua"), []byte("-- mine\n"), 0o644)
	if _, errOut, code := runChild(t, "", nil, nil, "init", dir); code != 1 || !strings.Contains(errOut, "nothing was written") {
		t.Fatalf("a second init: exit %d %s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "scripts", "policy.lua")); string(b) != "-- mine\n" {
		t.Fatal("a second init overwrote a file")
	}
	os.WriteFile(filepath.Join(dir, "scripts", "policy.lua"), before, 0o644)
	// dev loads the project and runs its tests.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	buf := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli(ctx, []string{"--config", filepath.Join(dir, "awaken.toml"), "dev"}, strings.NewReader(""), buf, buf)
	}()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(buf.String(), "4 passed, 0 failed"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("dev in the new project:\n%s", buf.String())
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("dev did not stop")
	}
}

// TestPluginLogsAreShown: awaken.log, print and runtime.log reach stderr
// with -v (and --log-level info), tagged with the plugin and file:line;
// without them they stay quiet.
func TestPluginLogsAreShown(t *testing.T) {
	dir := project(t, "plugin_dir = \"scripts\"\n[model]\nscript = \"script.toml\"\n[agents.default]\ntools = []\n", map[string]string{
		"script.toml": "[[turns]]\ntext = \"done\"\n",
		"scripts/talk.lua": `local awaken = require("awaken")
local p = awaken.plugin {}
p:on("step_start", function(ctx)
  print("hello from print")
  awaken.log.info("hello from log", { step = ctx.run.step })
  ctx:emit("runtime.log", { level = "info", message = "hello from runtime.log" })
end)
return p
`,
		"scripts/talk_test.lua": "local t = require('awaken.testing')\nt.test('runs', function() t.harness { plugins = { 'talk' } }:phase('step_start', {}) end)\n",
	})
	cfg := filepath.Join(dir, "awaken.toml")
	for _, args := range [][]string{{"run", "-v", "hi"}, {"run", "--log-level", "info", "hi"}, {"test", "-v"}} {
		_, errOut, code := runChild(t, "", nil, nil, append([]string{"--config", cfg}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errOut)
		}
		for _, want := range []string{"hello from print", "hello from log", "plugin=talk", "at=scripts/talk.lua:4", "at=scripts/talk.lua:5", "step=1"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%v: no %q in\n%s", args, want, errOut)
			}
		}
		if args[0] == "run" && !strings.Contains(errOut, "hello from runtime.log") {
			t.Errorf("%v: no runtime.log line in\n%s", args, errOut)
		}
	}
	if _, errOut, _ := runChild(t, "", nil, nil, "--config", cfg, "run", "hi"); strings.Contains(errOut, "hello") {
		t.Fatalf("plugin logs without -v:\n%s", errOut)
	}
}

// TestReadmeTourWorksAsWritten follows the README's tour: the plugin of
// "Write a plugin" and the tests of "Test it", saved where it says, pass;
// with the phase typo the README shows, check prints the error it quotes.
func TestReadmeTourWorksAsWritten(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	block := func(section string) string {
		t.Helper()
		i := strings.Index(readme, section)
		j := strings.Index(readme[i:], "```lua\n")
		k := strings.Index(readme[i+j+7:], "```")
		if i < 0 || j < 0 || k < 0 {
			t.Fatalf("no Lua block after %q", section)
		}
		return readme[i+j+7 : i+j+7+k]
	}
	plugin, tests := block("### 2. Write a plugin"), block("### 3. Test it")
	if !strings.Contains(readme, "Save this as `scripts/shellguard.lua`") || !strings.Contains(readme, "save this as `scripts/shellguard_test.lua`") {
		t.Fatal("the tour no longer says where to save its files")
	}
	dir := project(t, "plugin_dir = \"scripts\"\n[model]\nscript = \"s.toml\"\n", map[string]string{
		"s.toml": "[[turns]]\ntext = \"ok\"\n", "scripts/shellguard.lua": plugin, "scripts/shellguard_test.lua": tests})
	cfg := filepath.Join(dir, "awaken.toml")
	if out, errOut, code := runChild(t, "", nil, nil, "--config", cfg, "test"); code != 0 || !strings.Contains(out, "2 passed, 0 failed") {
		t.Fatalf("the tour's tests: exit %d\n%s%s", code, out, errOut)
	}
	os.WriteFile(filepath.Join(dir, "scripts", "shellguard.lua"), []byte(strings.Replace(plugin, `"after_tool_execute"`, `"after_tool_exec"`, 1)), 0o644)
	out, _, _ := runChild(t, "", nil, nil, "--config", cfg, "check")
	quoted := `scripts/shellguard.lua:22: plugin_load_failed: p:on: unknown phase "after_tool_exec" (did you mean`
	if !strings.Contains(out, quoted) || !strings.Contains(strings.Join(strings.Fields(readme), " "), strings.Join(strings.Fields(quoted), " ")) {
		t.Fatalf("check prints\n%s\nand the README must quote %q", out, quoted)
	}
}

// TestErrorsAreReportedOnce: a configuration that does not load is
// reported once, by the command, not again by the log.
func TestErrorsAreReportedOnce(t *testing.T) {
	dir := project(t, "[agents.a]\nplugins = [\"nosuch\"]\n", nil)
	_, errOut, code := runChild(t, dir, nil, nil, "run", "x")
	if code != 2 || strings.Count(errOut, `plugin "nosuch"`) != 1 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
}

// TestTheBuiltBinary builds awaken-lua with go build, as a user installs
// it, and runs it in an empty directory: run, init, test, eval, --help,
// --version.
func TestTheBuiltBinary(t *testing.T) {
	goBin, err := exec.LookPath("go") // go test runs with the go command on PATH
	if err != nil {
		t.Fatalf("this test builds the binary and needs the go command on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "awaken-lua")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	exe := func(wd string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = wd
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "hello"}, 0, "finish natural"},
		{[]string{"eval", "fs_read", `{"path": ".env"}`}, 1, "set_result by guard"},
		{[]string{"--help"}, 0, "usage: awaken-lua"},
		{[]string{"--version"}, 0, "awaken-lua "},
		{[]string{"init", "proj"}, 0, "proj/scripts/policy.lua"},
	} {
		if out, code := exe(dir, tc.args...); code != tc.code || !strings.Contains(out, tc.want) {
			t.Fatalf("%v: exit %d\n%s", tc.args, code, out)
		}
	}
	if out, code := exe(filepath.Join(dir, "proj"), "test"); code != 0 || !strings.Contains(out, "4 passed, 0 failed") {
		t.Fatalf("test in the new project: exit %d\n%s", code, out)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "proj" {
		t.Fatalf("the directory holds %v; only init's project was expected", left)
	}
}

// TestDevWithoutConfigWaits: dev where there is no awaken.toml says it
// waits for one, rather than a generation of 0 plugins whose tests
// complain of a missing scripts/; once init makes a project, it loads.
func TestDevWithoutConfigWaits(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	buf := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- cli(ctx, []string{"dev"}, strings.NewReader(""), buf, buf) }()
	wait := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(buf.String(), want); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("dev never said %q:\n%s", want, buf.String())
			}
		}
	}
	wait("no awaken.toml here: waiting for one")
	if out := buf.String(); strings.Contains(out, "loaded") || strings.Contains(out, "tests:") {
		t.Fatalf("dev without an awaken.toml:\n%s", out)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("dev wrote %v while it waited", left)
	}
	var out, errOut syncBuffer
	if code := cli(context.Background(), []string{"init", "."}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("init: exit %d %s", code, errOut.String())
	}
	wait("4 passed, 0 failed")
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("dev did not stop")
	}
}
