package luabridge_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/awaken-lua/awaken-lua/luabridge"
)

// runMapTests runs the *_test.lua files of an in-memory plugin directory.
func runMapTests(t *testing.T, fsys fstest.MapFS, timeout time.Duration) (luabridge.TestSummary, string) {
	t.Helper()
	src := luabridge.Source{FS: fsys, Name: "scripts"}
	files, err := luabridge.FindTests(src)
	if err != nil || len(files) == 0 {
		t.Fatalf("files %v %v", files, err)
	}
	var out strings.Builder
	sum := luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files, Plugins: src, Out: &out, Verbose: true, Timeout: timeout})
	return sum, out.String()
}

const blockRm = "local awaken = require('awaken')\nlocal p = awaken.plugin {}\n" +
	"p:tool_gate(function(ctx, call) if call.name == 'rm' then return awaken.block('no rm') end end)\nreturn p\n"

// A harness made at the top of a test file serves every test of the file.
// It used to be closed after the first test, so the others saw their gate
// hooks fail and the call blocked: a test that expects a block passed for
// the wrong reason.
func TestHarnessOfTheFileServesEveryTest(t *testing.T) {
	sum, out := runMapTests(t, fstest.MapFS{
		"guard.lua": {Data: []byte(blockRm)},
		"guard_test.lua": {Data: []byte("local t = require('awaken.testing')\n" +
			"local h = t.harness { plugins = { 'guard' } }\n" +
			"t.test('one', function() t.eq(h:gate { name = 'rm' }.reason, 'no rm') end)\n" +
			"t.test('two', function() t.eq(h:gate { name = 'rm' }.reason, 'no rm') end)\n" +
			"t.test('three', function() t.eq(h:gate { name = 'ls' }.decision, 'allow') end)\n")},
	}, 0)
	if sum.Passed != 3 || sum.Failed != 0 {
		t.Fatalf("passed %d failed %d\n%s", sum.Passed, sum.Failed, out)
	}
}

// A harness a test made ends with that test; using it in a later test
// raises instead of blocking every call as a closed plugin generation does.
func TestHarnessOfAnEndedTestRaises(t *testing.T) {
	sum, out := runMapTests(t, fstest.MapFS{
		"guard.lua": {Data: []byte(blockRm)},
		"guard_test.lua": {Data: []byte("local t = require('awaken.testing')\nlocal kept\n" +
			"t.test('makes', function() kept = t.harness { plugins = { 'guard' } } end)\n" +
			"t.test('uses', function() t.eq(kept:gate { name = 'rm' }.decision, 'block') end)\n")},
	}, 0)
	if sum.Passed != 1 || sum.Failed != 1 || !strings.Contains(out, "scripts/guard_test.lua:4: this harness was made by the test \"makes\", which has ended") {
		t.Fatalf("passed %d failed %d\n%s", sum.Passed, sum.Failed, out)
	}
}

// The tests after one that ran out of time cannot run on the file's Lua
// state, which the timeout stopped; they run on the file loaded again.
// They used to be dropped without a word, so the summary counted fewer
// tests than the file has.
func TestTestsAfterATimeoutRun(t *testing.T) {
	sum, out := runMapTests(t, fstest.MapFS{
		"loop_test.lua": {Data: []byte("local t = require('awaken.testing')\n" +
			"t.test('first', function() end)\n" +
			"t.test('spins', function() while true do end end)\n" +
			"t.test('after', function() end)\n" +
			"t.test('spins again', function() while true do end end)\n" +
			"t.test('last', function() t.eq(1, 2) end)\n")},
	}, 200*time.Millisecond)
	if sum.Passed != 2 || sum.Failed != 3 || len(sum.Results) != 5 ||
		!strings.Contains(out, "PASS scripts/loop_test.lua:4: after") || !strings.Contains(out, "FAIL scripts/loop_test.lua:6: last") {
		t.Fatalf("passed %d failed %d results %d\n%s", sum.Passed, sum.Failed, len(sum.Results), out)
	}
}

// A harness call that fails with an error of its own (not a plugin's,
// which has the plugin's file:line) is reported at the line of the call,
// as a failed t.eq is, not only at the test's first line; t.raises still
// sees the code first.
func TestHarnessErrorsNameTheLineOfTheCall(t *testing.T) {
	sum, out := runMapTests(t, fstest.MapFS{
		"guard.lua": {Data: []byte(blockRm)},
		"guard_test.lua": {Data: []byte("local t = require('awaken.testing')\n" +
			"t.test('resumes nothing', function()\n" +
			"  local h = t.harness { plugins = { 'guard' } }\n" +
			"  h:resume { decisions = { { target = 'c1', action = 'resume' } } }\n" +
			"end)\n" +
			"t.test('config', function()\n  t.harness { plugins = { 'guard' }, config = { gaurd = {} } }\nend)\n" +
			"t.test('caught', function()\n" +
			"  local h = t.harness { plugins = { 'guard' } }\n" +
			"  t.raises(function() h:resume { decisions = { { target = 'c1', action = 'resume' } } } end, '^unknown_resume_target: ')\n" +
			"end)\n")},
	}, 0)
	if sum.Passed != 1 || sum.Failed != 2 ||
		!strings.Contains(out, "\n  scripts/guard_test.lua:4: unknown_resume_target: thread \"main\" has no run waiting") ||
		!strings.Contains(out, "\n  scripts/guard_test.lua:7: config_invalid: config for plugin \"gaurd\"") {
		t.Fatalf("passed %d failed %d\n%s", sum.Passed, sum.Failed, out)
	}
}

// A test that raises a table is reported with the table's contents, not
// its address, which says nothing and changes from run to run.
func TestATableRaisedIsShown(t *testing.T) {
	sum, out := runMapTests(t, fstest.MapFS{
		"e_test.lua": {Data: []byte("local t = require('awaken.testing')\nt.test('tbl', function() error({ code = 'E1' }) end)\n")},
	}, 0)
	if sum.Failed != 1 || sum.Results[0].Message != `scripts/e_test.lua:2: the test raised a table: {"code":"E1"}` {
		t.Fatalf("%q\n%s", sum.Results[0].Message, out)
	}
}
