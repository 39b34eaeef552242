package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/journal"
)

const journalToml = `plugin_dir = "scripts"
[model]
kind = "scripted"
script = "scenario.toml"
[tools]
root = "ws"
[journal]
path = "journal"
[agents.default]
tools = ["fs_read"]
[plugins.policy]
deny = ["secret.txt"]
`

const journalScenario = `[[turns]]
text = "reading"
[[turns.tool_calls]]
name = "fs_read"
args = { path = "README.md" }
[[turns.tool_calls]]
name = "fs_read"
args = { path = "notes.txt" }
[[turns]]
text = "both read"
`

// policyV1 allows what its config does not deny; policyV2 also blocks
// notes.txt.
const policyV1 = `local awaken = require("awaken")
local p = awaken.plugin { config = { deny = { type = "array", items = { type = "string" }, default = {} } } }
p:tool_gate(function(ctx, call)
  for _, d in ipairs(ctx.config.deny) do
    if call.args.path == d then return awaken.block(d .. " is denied") end
  end
end)
return p
`

var policyV2 = strings.Replace(policyV1, `if call.args.path == d then`, `if call.args.path == d or call.args.path == "notes.txt" then`, 1)

// journalProject is a project that journals its runs, with policyV1 and
// the scenario that reads both files of ws/.
func journalProject(t *testing.T) (dir, cfg string) {
	t.Helper()
	dir = project(t, journalToml, map[string]string{
		"scenario.toml": journalScenario, "scripts/policy.lua": policyV1,
		"ws/README.md": "readme", "ws/notes.txt": "notes",
	})
	return dir, filepath.Join(dir, "awaken.toml")
}

// record runs the scripted model once on cfg, which journals the run.
func record(t *testing.T, cfg, prompt string) {
	t.Helper()
	if code, _, errOut := awaken(t, "", "--config", cfg, "run", prompt); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
}

// exportAndTest exports the last run the project's journal holds as a Lua
// test, which must pass against the recording's plugins, and returns its
// path.
func exportAndTest(t *testing.T, dir, cfg string) string {
	t.Helper()
	var runID string
	journal.Read([]string{filepath.Join(dir, "journal")}, func(_ journal.Pos, r *journal.Record) error {
		if r.Rec == journal.KindRun {
			runID = r.RunID
		}
		return nil
	})
	testFile := filepath.Join(dir, "scripts", "journal_test.lua")
	if code, _, errOut := awaken(t, "", "--config", cfg, "journal", "export", runID, "-o", testFile); code != exitOK {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	if code, out, errOut := awaken(t, "", "--config", cfg, "test", testFile); code != exitOK {
		b, _ := os.ReadFile(testFile)
		t.Fatalf("the exported test fails against the recording's plugins: %s %s\n%s", out, errOut, b)
	}
	return testFile
}

// The loop a README promises: record, edit, replay, export, verify.
func TestRecordReplayExportVerify(t *testing.T) {
	dir, cfg := journalProject(t)
	record(t, cfg, "read both")
	jdir := filepath.Join(dir, "journal")

	code, out, errOut := awaken(t, "", "--config", cfg, "journal", "verify")
	if code != exitOK || !strings.Contains(out, "every link holds") {
		t.Fatalf("verify: exit %d: %s %s", code, out, errOut)
	}
	code, out, errOut = awaken(t, "", "--config", cfg, "replay")
	if code != exitOK || !strings.Contains(out, "no flips: 1 run,") || strings.Contains(out, "skipped") {
		t.Fatalf("replay, same plugins: exit %d: %s %s", code, out, errOut)
	}

	testFile := exportAndTest(t, dir, cfg)

	os.WriteFile(filepath.Join(dir, "scripts", "policy.lua"), []byte(policyV2), 0o644)
	code, out, _ = awaken(t, "", "--config", cfg, "replay")
	if code != exitFailed || !strings.Contains(out, "allow->block 1") || !strings.Contains(out, `call call_1_2 fs_read {"path":"notes.txt"}`) {
		t.Fatalf("replay, candidate: exit %d:\n%s", code, out)
	}
	// --json writes the kind as --fail-on takes it and grep finds it, not
	// HTML-escaped ("allow-\u003eblock"); eval --json and test --format
	// json alike.
	if code, out, _ := awaken(t, "", "--config", cfg, "replay", "--json"); code != exitFailed || !strings.Contains(out, `"kind": "allow->block"`) {
		t.Fatalf("replay --json, candidate: exit %d:\n%s", code, out)
	}
	if _, out, _ := awaken(t, "", "--config", cfg, "eval", "--json", "fs_read", `{"path": "notes.txt", "q": "a<b && c->d"}`); !strings.Contains(out, `"decision":"block"`) ||
		!strings.Contains(out, `"q":"a<b && c->d"`) {
		t.Fatalf("eval --json: %s", out)
	}
	failing := filepath.Join(dir, "scripts", "arrow_test.lua")
	os.WriteFile(failing, []byte(`require("awaken.testing").test("arrow", function() error("want a<b && c->d") end)`), 0o644)
	if _, out, _ := awaken(t, "", "--config", cfg, "test", "--format", "json", failing); !strings.Contains(out, `"failed": 1`) || !strings.Contains(out, `want a<b && c->d`) {
		t.Fatalf("test --format json: %s", out)
	}
	os.Remove(failing)
	if code, out, _ := awaken(t, "", "--config", cfg, "replay", "--fail-on", "block->allow"); code != exitOK {
		t.Fatalf("--fail-on a kind that did not flip: exit %d\n%s", code, out)
	}
	if code, out, _ := awaken(t, "", "--config", cfg, "test", testFile); code != exitFailed || !strings.Contains(out, "fs_read call_1_2 was allowed") {
		t.Fatalf("the exported test passes against a candidate that flips a decision: exit %d\n%s", code, out)
	}

	// One edited byte fails verify at its line.
	files, _ := journal.Files(jdir)
	b, _ := os.ReadFile(files[0])
	i := strings.Index(string(b), "notes.txt")
	b[i] = 'N'
	os.WriteFile(files[0], b, 0o644)
	line := strings.Count(string(b[:i]), "\n") + 1
	code, _, errOut = awaken(t, "", "--config", cfg, "journal", "verify")
	if code != exitFailed || !strings.Contains(errOut, filepath.Base(files[0])+":"+itoa(line)+":") {
		t.Fatalf("verify after an edit at line %d: exit %d: %s", line, code, errOut)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// export of a run the journal does not hold points at replay --json, and
// replay --json lists the run ids export takes.
func TestExportHintListsTheRuns(t *testing.T) {
	dir, cfg := journalProject(t)
	for _, prompt := range []string{"read both", "read both again"} {
		record(t, cfg, prompt)
	}
	code, _, errOut := awaken(t, "", "--config", cfg, "journal", "export", "run_0000000000000000")
	if code != exitUsage || !strings.Contains(errOut, "`awaken-lua replay --json` lists the journal's runs (run_ids)") {
		t.Fatalf("export of an unknown run: exit %d: %s", code, errOut)
	}
	var want []string
	journal.Read([]string{filepath.Join(dir, "journal")}, func(_ journal.Pos, r *journal.Record) error {
		if r.Rec == journal.KindRun {
			want = append(want, r.RunID)
		}
		return nil
	})
	code, out, errOut := awaken(t, "", "--config", cfg, "replay", "--json")
	var rep struct {
		Runs   int      `json:"runs"`
		RunIDs []string `json:"run_ids"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK {
		t.Fatalf("replay --json: exit %d, %v: %s %s", code, err, out, errOut)
	}
	if len(want) != 2 || rep.Runs != 2 || strings.Join(rep.RunIDs, ",") != strings.Join(want, ",") {
		t.Fatalf("run_ids %v (runs %d), the journal's runs %v", rep.RunIDs, rep.Runs, want)
	}
	if code, out, errOut := awaken(t, "", "--config", cfg, "journal", "export", rep.RunIDs[1]); code != exitOK || !strings.Contains(out, rep.RunIDs[1]) {
		t.Fatalf("export of a listed run: exit %d: %s %s", code, out, errOut)
	}
}

// --fail-on with a kind no flip has is a usage error: a misspelt kind
// never matches, so the gate would pass a change that flips decisions.
func TestReplayFailOnRefusesUnknownKinds(t *testing.T) {
	dir, cfg := journalProject(t)
	record(t, cfg, "read both")
	// The candidate flips allow->block on notes.txt.
	os.WriteFile(filepath.Join(dir, "scripts", "policy.lua"), []byte(policyV2), 0o644)
	for _, tc := range []struct {
		failOn string
		code   int
		want   []string
	}{
		{"allow->blok", exitUsage, []string{`--fail-on: "allow->blok" is not a flip kind (did you mean "allow->block"?)`,
			"FROM, TO, KIND: allow, block, suspend, set_result", "context changed", "termination changed"}},
		{"block->allow,contxt changed", exitUsage, []string{`"contxt changed" is not a flip kind (did you mean "context changed"?)`}},
		{"allow->block,", exitUsage, []string{"an empty kind"}},
		{"reads masked field", exitUsage, []string{"is not a flip: replay reports decisions that read masked fields apart"}},
		{"context changed, allow->block", exitFailed, nil},
		{"block by another plugin", exitOK, nil},
	} {
		code, out, errOut := awaken(t, "", "--config", cfg, "replay", "--fail-on", tc.failOn)
		if code != tc.code {
			t.Errorf("--fail-on %q: exit %d, want %d\n%s%s", tc.failOn, code, tc.code, out, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("--fail-on %q: stderr lacks %q:\n%s", tc.failOn, w, errOut)
			}
		}
		if tc.code == exitUsage && out != "" {
			t.Errorf("--fail-on %q: a usage error replayed:\n%s", tc.failOn, out)
		}
	}
}

// dev replays the journal on each save and puts the flips on its line.
func TestDevReplaysTheJournalOnSave(t *testing.T) {
	dir, cfg := journalProject(t)
	record(t, cfg, "read both")
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- cli(ctx, []string{"--config", cfg, "dev"}, strings.NewReader(""), out, out) }()
	defer func() {
		cancel()
		<-done
	}()
	wait := func(want string, again func()) {
		t.Helper()
		deadline, last := time.Now().Add(20*time.Second), time.Now()
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q within 20s:\n%s", want, out.String())
			}
			time.Sleep(20 * time.Millisecond)
			if again != nil && time.Since(last) > time.Second {
				again()
				last = time.Now()
			}
		}
	}
	wait("g1 loaded (1 plugin", nil)
	wait("replay 1 run: 0 flips", nil)
	save := func() { os.WriteFile(filepath.Join(dir, "scripts", "policy.lua"), []byte(policyV2), 0o644) }
	save()
	wait("replay 1 run: 1 flip", save)
	wait("flips: allow->block 1 (policy)", nil)
}

// A candidate named by --plugin-dir or --config that is not there is a
// usage error naming the flag: never a replay against no plugins, and
// never an error at the configuration's plugin_dir line.
func TestReplayCandidateMustExist(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		args       []string
		want       string
	}{
		// Before, the default plugin_dir let the host load no plugins:
		// replay passed against an empty candidate.
		{"plugin_dir left out", strings.NewReplacer("plugin_dir = \"scripts\"\n", "", "[plugins.policy]\ndeny = [\"secret.txt\"]\n", "").Replace(journalToml),
			[]string{"--plugin-dir", "nope"}, "config_invalid: --plugin-dir nope: no such directory"},
		{"plugin_dir written", journalToml,
			[]string{"--plugin-dir", "nope"}, "config_invalid: --plugin-dir nope: no such directory"},
		{"a file", journalToml,
			[]string{"--plugin-dir", "scenario.toml"}, "config_invalid: --plugin-dir scenario.toml: a file, not a directory"},
		{"--config", journalToml,
			[]string{"--config", "nope.toml", "journal"}, "nope.toml: config_invalid: cannot read the configuration file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, tc.toml, map[string]string{
				"scenario.toml": journalScenario, "scripts/policy.lua": policyV1,
				"ws/README.md": "readme", "ws/notes.txt": "notes",
			})
			t.Chdir(dir)
			if code, _, errOut := awaken(t, "", "run", "read both"); code != exitOK {
				t.Fatalf("run: exit %d: %s", code, errOut)
			}
			code, out, errOut := awaken(t, "", append([]string{"replay"}, tc.args...)...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "awaken.toml:") {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q (want %q)", code, exitUsage, out, errOut, tc.want)
			}
		})
	}
}

// journal names a subcommand it does not know, with a did-you-mean, before
// the usage line.
func TestJournalUnknownSubcommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verfy"}, `awaken-lua journal: unknown subcommand "verfy" (did you mean "verify"?); the subcommands are verify and export` + "\nusage: "},
		{[]string{"exprot", "run_1"}, `awaken-lua journal: unknown subcommand "exprot" (did you mean "export"?)`},
		{[]string{"list"}, `awaken-lua journal: unknown subcommand "list"; the subcommands are verify and export` + "\nusage: "},
		{nil, "usage: awaken-lua journal verify"},
		{[]string{"export"}, "usage: awaken-lua journal verify"},
	} {
		code, out, errOut := awaken(t, "", append([]string{"journal"}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, tc.want) {
			t.Errorf("journal %v: exit %d, stdout %q, stderr %q (want it to start %q)", tc.args, code, out, errOut, tc.want)
		}
	}
}

// dev drives no runs, so it writes no journal: starting it and saving
// leaves no file, where each start used to leave an empty one. A run
// afterwards still records, and dev still replays what it recorded.
func TestDevLeavesNoEmptyJournalFile(t *testing.T) {
	dir, cfg := journalProject(t)
	jdir := filepath.Join(dir, "journal")
	dev := func(want string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		out := &syncBuffer{}
		done := make(chan int, 1)
		go func() { done <- cli(ctx, []string{"--config", cfg, "dev"}, strings.NewReader(""), out, out) }()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				cancel()
				<-done
				t.Fatalf("no %q within 20s:\n%s", want, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		<-done
	}
	for range 2 {
		dev("g1 loaded (1 plugin")
		if files, _ := journal.Files(jdir); len(files) != 0 {
			t.Fatalf("dev left journal files %v", files)
		}
	}
	record(t, cfg, "read both")
	files, _ := journal.Files(jdir)
	if len(files) != 1 {
		t.Fatalf("a run recorded into %v, want one file", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Size() == 0 {
		t.Fatalf("the run's journal file is empty: %v", err)
	}
	dev("replay 1 run: 0 flips")
	if after, _ := journal.Files(jdir); len(after) != 1 {
		t.Fatalf("dev added journal files: %v", after)
	}
}

// A run whose only calls of a tool were blocked exports a test that passes:
// the tool is offered to the harness's run though no call of it ran, so
// the plugin that blocked decides again rather than the runtime.
func TestExportOffersABlockedTool(t *testing.T) {
	dir := project(t, strings.Replace(journalToml, `deny = ["secret.txt"]`, `deny = ["README.md"]`, 1), map[string]string{
		"scenario.toml": journalScenario, "scripts/policy.lua": policyV1,
		"ws/README.md": "readme", "ws/notes.txt": "notes",
	})
	cfg := filepath.Join(dir, "awaken.toml")
	record(t, cfg, "read both")
	exportAndTest(t, dir, cfg)
}

// A run of an agent with a [plugins.<id>] table of its own ran under that
// table: the exported test configures the plugin with it, not with the
// project-wide one, or it fails against the plugins that made it.
func TestExportUsesTheAgentsPluginConfig(t *testing.T) {
	toml := strings.Replace(journalToml, "[plugins.policy]", "[agents.default.plugins.policy]\ndeny = [\"notes.txt\"]\n[plugins.policy]", 1)
	dir := project(t, toml, map[string]string{
		"scenario.toml": journalScenario, "scripts/policy.lua": policyV1,
		"ws/README.md": "readme", "ws/notes.txt": "notes",
	})
	cfg := filepath.Join(dir, "awaken.toml")
	record(t, cfg, "read both")
	var blocked bool
	journal.Read([]string{filepath.Join(dir, "journal")}, func(_ journal.Pos, r *journal.Record) error {
		for _, d := range r.Decisions {
			blocked = blocked || d.Decision.String() == "block"
		}
		return nil
	})
	if !blocked {
		t.Fatal("the agent's own policy table did not block notes.txt in the recorded run")
	}
	exportAndTest(t, dir, cfg)
}

// The journal does not keep the configuration a run ran under, only its
// hash (config_hash): export configures the plugins with the tables as
// they are now, and says so when the configuration changed since the run,
// whose recorded decisions the test then asserts against another one.
func TestExportWarnsOfAConfigurationChangedSinceTheRun(t *testing.T) {
	dir, cfg := journalProject(t)
	record(t, cfg, "read both")
	var runID, hash string
	journal.Read([]string{filepath.Join(dir, "journal")}, func(_ journal.Pos, r *journal.Record) error {
		if r.Rec == journal.KindRun {
			runID, hash = r.RunID, r.ConfigHash
		}
		return nil
	})
	if len(hash) != 64 {
		t.Fatalf("the run header's config_hash is %q, want the configuration's SHA-256", hash)
	}
	if code, out, errOut := awaken(t, "", "--config", cfg, "journal", "export", runID); code != exitOK || strings.Contains(errOut+out, "configuration changed") {
		t.Fatalf("export, same configuration: exit %d: %s\n%s", code, errOut, out)
	}
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(b), `deny = ["secret.txt"]`, `deny = ["secret.txt", "notes.txt"]`, 1)), 0o644)
	code, out, errOut := awaken(t, "", "--config", cfg, "journal", "export", runID)
	if code != exitOK || !strings.Contains(errOut, "warning: the configuration changed since run "+runID) ||
		!strings.Contains(out, "-- warning: the configuration changed since run "+runID) {
		t.Fatalf("export, changed configuration: exit %d: %s\n%s", code, errOut, out)
	}
}
