package luabridge_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/awaken-lua/awaken-lua/luabridge"
)

func TestLuaTestRunner(t *testing.T) {
	src := luabridge.Source{FS: os.DirFS("testdata/luatest"), Name: "scripts"}
	files, err := luabridge.FindTests(src)
	if err != nil || len(files) != 2 {
		t.Fatalf("files %v %v", files, err)
	}
	var out strings.Builder
	sum := luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files, Plugins: src, Out: &out})
	if sum.Passed != 5 || sum.Failed != 1 {
		t.Fatalf("passed %d failed %d\n%s", sum.Passed, sum.Failed, out.String())
	}
	got := out.String()
	want := "FAIL scripts/failing_test.lua:3: this one fails ("
	if !strings.HasPrefix(got, want) || !strings.Contains(got, `  scripts/failing_test.lua:6: t.eq: expected "block", got "allow"`) ||
		!strings.HasSuffix(got, strings.Repeat("-", 80)+"\n5 passed, 1 failed\n") {
		t.Fatalf("output:\n%s", got)
	}

	// Only the failing file, filtered: 0 passed, 1 failed.
	out.Reset()
	sum = luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files, Plugins: src, Out: &out, Filter: regexp.MustCompile("fails")})
	if sum.Passed != 0 || sum.Failed != 1 || !strings.HasSuffix(out.String(), "0 passed, 1 failed\n") {
		t.Fatalf("filtered:\n%s", out.String())
	}
	// Verbose lists passes too.
	out.Reset()
	luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files[1:], Plugins: src, Out: &out, Verbose: true})
	if strings.Count(out.String(), "PASS ") != 5 {
		t.Fatalf("verbose:\n%s", out.String())
	}
}

// TestTicketExpiryInTheHarness runs testdata/expiry: tickets with a
// timeout, h:resume{after = ...} and h:run's expired.
func TestTicketExpiryInTheHarness(t *testing.T) { runTestdata(t, "testdata/expiry", 5) }

// runTestdata runs the Lua tests of one testdata directory, whose plugins
// are in it too, and expects all of them, passed of them, to pass.
func runTestdata(t *testing.T, dir string, passed int) {
	t.Helper()
	src := luabridge.Source{FS: os.DirFS(dir), Name: "scripts"}
	files, err := luabridge.FindTests(src)
	if err != nil || len(files) != 1 {
		t.Fatalf("files %v %v", files, err)
	}
	var out strings.Builder
	sum := luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files, Plugins: src, Out: &out, Verbose: true})
	if sum.Passed != passed || sum.Failed != 0 {
		t.Fatalf("passed %d failed %d\n%s", sum.Passed, sum.Failed, out.String())
	}
}

// TestHarnessGateDefaultReason: a block without a reason reads "blocked by
// <plugin>" in h:gate, as a run records it.
func TestHarnessGateDefaultReason(t *testing.T) {
	fsys := fstest.MapFS{
		"quiet.lua": {Data: []byte("local awaken = require('awaken')\nlocal p = awaken.plugin {}\np:tool_gate(function() return awaken.block('') end)\nreturn p\n")},
		"quiet_test.lua": {Data: []byte("local t = require('awaken.testing')\nt.test('reason', function()\n" +
			"  local d = t.harness { plugins = { 'quiet' } }:gate { name = 'x' }\n  t.eq(d.reason, 'blocked by quiet')\nend)\n")},
	}
	src := luabridge.Source{FS: fsys, Name: "scripts"}
	files, err := luabridge.FindTests(src)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if sum := luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files, Plugins: src, Out: &out}); sum.Passed != 1 {
		t.Fatalf("%s", out.String())
	}
}

// TestHarnessPhaseDrivesARun runs testdata/phase: h:phase restores a run at
// the stage before the phase, refuses what no run reaches, and saves the
// thread as a run does.
func TestHarnessPhaseDrivesARun(t *testing.T) { runTestdata(t, "testdata/phase", 4) }

// TestHarnessCwd runs testdata/cwd: opts.cwd is what hooks read as
// ctx.run.cwd, and awaken.rules anchors ./x there.
func TestHarnessCwd(t *testing.T) { runTestdata(t, "testdata/cwd", 4) }

// TestHarnessArgumentsOfTheWrongShape runs testdata/harnessmisuse: a
// misspelt or wrongly typed harness argument raises, naming it.
func TestHarnessArgumentsOfTheWrongShape(t *testing.T) { runTestdata(t, "testdata/harnessmisuse", 6) }
