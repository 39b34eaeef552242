package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/journal"
)

// journal export -o FILE that fails (an unknown run, a run that did not
// end) leaves FILE as it was: it used to create (truncate) the file before
// reading the journal, so a failed export emptied an existing test, or left
// an empty *_test.lua that awaken-lua test then loaded.
func TestExportFailureKeepsTheOutputFile(t *testing.T) {
	dir, cfg := journalProject(t)
	record(t, cfg, "read both")
	for _, tc := range []struct {
		name     string
		existing *string // nil: the file does not exist
	}{
		{"an existing test", ptr("-- my regression test\n")},
		{"a new file", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "scripts", strings.ReplaceAll(tc.name, " ", "_")+"_test.lua")
			if tc.existing != nil {
				if err := os.WriteFile(out, []byte(*tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, stdout, errOut := awaken(t, "", "--config", cfg, "journal", "export", "run_0000000000000000", "-o", out)
			if code != exitUsage || stdout != "" || !strings.Contains(errOut, "journal_invalid: run run_0000000000000000 has no header") {
				t.Fatalf("export of an unknown run: exit %d, stdout %q, stderr %q", code, stdout, errOut)
			}
			b, err := os.ReadFile(out)
			switch {
			case tc.existing == nil && !os.IsNotExist(err):
				t.Fatalf("a failed export left %s (%q, %v)", out, b, err)
			case tc.existing != nil && string(b) != *tc.existing:
				t.Fatalf("a failed export changed %s to %q (%v)", out, b, err)
			}
			ents, _ := os.ReadDir(filepath.Dir(out))
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") {
					t.Fatalf("a failed export left %s behind", e.Name())
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// A journal rotated in the middle of a run, with the first line of a
// later file damaged (hand-edited, removed) or the file removed: replay
// of the same plugins reports no flip and exits 0, naming the run it
// could not follow. It used to drive the run on without the lost phase
// and report a "replay failed" flip (exit 1): the journal's damage blamed
// on the candidate.
func TestReplayOfADamagedRotatedJournalFlipsNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, file string)
	}{
		{"not a record", func(t *testing.T, file string) { editLine(t, file, func(string) string { return "garbage" }) }},
		{"first line removed", func(t *testing.T, file string) { editLine(t, file, func(string) string { return "" }) }},
		{"file removed", func(t *testing.T, file string) { os.Remove(file) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, strings.Replace(journalToml, "path = \"journal\"\n", "path = \"journal\"\nmax_file_size = \"2KiB\"\n", 1), map[string]string{
				"scenario.toml": journalScenario, "scripts/policy.lua": policyV1,
				"ws/README.md": "readme", "ws/notes.txt": "notes",
			})
			cfg := filepath.Join(dir, "awaken.toml")
			record(t, cfg, "read both")
			files, _ := filepath.Glob(filepath.Join(dir, "journal", "journal-*.ndjson"))
			if len(files) < 3 {
				t.Fatalf("the run rotated into %d files, want 3 or more", len(files))
			}
			tc.damage(t, files[1])
			code, out, errOut := awaken(t, "", "--config", cfg, "replay")
			if code != exitOK || !strings.Contains(out, "no flips") || !strings.Contains(out, "its records from here on are left out") {
				t.Fatalf("replay: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			// export names the damage, where it used to say the run had
			// not ended.
			var runID string
			journal.Read([]string{filepath.Join(dir, "journal")}, func(_ journal.Pos, r *journal.Record) error {
				if r.Rec == journal.KindRun {
					runID = r.RunID
				}
				return nil
			})
			code, out, errOut = awaken(t, "", "--config", cfg, "journal", "export", runID)
			if code != exitUsage || out != "" || !strings.Contains(errOut, "journal_invalid: ") ||
				!strings.Contains(errOut, "run "+runID+": line ") && !strings.Contains(errOut, "run "+runID+": lines before") || !strings.Contains(errOut, "cannot be exported") || strings.Contains(errOut, "has not ended") {
				t.Fatalf("export: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
		})
	}
}

// editLine replaces a file's first line with what edit makes of it, or
// removes it when that is empty.
func editLine(t *testing.T, file string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(b), "\n")
	if s := edit(first); s != "" {
		rest = s + "\n" + rest
	}
	if err := os.WriteFile(file, []byte(rest), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replay and journal verify of a journal with no records (a wrong
// directory, a file that is not a journal, a journal nothing was recorded
// to yet) are errors (exit 2, journal_invalid) naming what was read: they
// used to report "no flips: 0 runs" and "ok: 0 records" with exit 0, which
// passes a CI gate that compared nothing.
func TestEmptyJournalIsAnError(t *testing.T) {
	dir, cfg := journalProject(t)
	empty := filepath.Join(dir, "elsewhere")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"replay, an empty directory", []string{"replay", empty}, "journal_invalid: " + empty + " holds no journal records"},
		{"replay, the plugin directory", []string{"replay", filepath.Join(dir, "scripts")}, "holds no journal records"},
		{"replay, not a journal", []string{"replay", filepath.Join(dir, "scenario.toml")}, "scenario.toml holds no journal records"},
		{"replay, nothing recorded yet", []string{"replay"}, "the journal directory " + filepath.Join(dir, "journal") + " holds no journal records"},
		{"replay --json", []string{"replay", "--json", empty}, "holds no journal records"},
		{"verify, an empty directory", []string{"journal", "verify", empty}, "journal_invalid: " + empty + " holds no journal records"},
		{"verify, two", []string{"journal", "verify", empty, filepath.Join(dir, "scripts")}, empty + " and " + filepath.Join(dir, "scripts") + " holds no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "replay, nothing recorded yet" {
				os.MkdirAll(filepath.Join(dir, "journal"), 0o755) // as dev leaves it
			}
			code, out, errOut := awaken(t, "", append([]string{"--config", cfg}, tc.args...)...)
			if code != exitUsage || strings.Contains(out, "no flips") || strings.Contains(out, "ok:") || !strings.Contains(errOut, tc.want) ||
				!strings.Contains(errOut, "record some runs first") {
				t.Fatalf("exit %d (want %d)\nstdout %q\nstderr %q\nwant %q", code, exitUsage, out, errOut, tc.want)
			}
		})
	}
	// Once a run is recorded, the same commands pass.
	record(t, cfg, "read both")
	for _, args := range [][]string{{"replay"}, {"journal", "verify"}} {
		if code, out, errOut := awaken(t, "", append([]string{"--config", cfg}, args...)...); code != exitOK {
			t.Errorf("%v after a run: exit %d: %s %s", args, code, out, errOut)
		}
	}
}

// A journal file named twice (its directory and itself, or twice over) is
// read once: replay used to count its runs twice (and, since a file read
// again looks like a gap in its writer's chain, could leave runs out), and
// verify its lines twice.
func TestJournalFileNamedTwiceIsReadOnce(t *testing.T) {
	dir, cfg := journalProject(t)
	record(t, cfg, "read both")
	jdir := filepath.Join(dir, "journal")
	files, _ := filepath.Glob(filepath.Join(jdir, "journal-*.ndjson"))
	if len(files) != 1 {
		t.Fatalf("files %v, want 1", files)
	}
	_, once, _ := awaken(t, "", "--config", cfg, "journal", "verify", jdir)
	for _, paths := range [][]string{{jdir, files[0]}, {files[0], files[0]}, {jdir, jdir + "/"}} {
		code, out, errOut := awaken(t, "", append([]string{"--config", cfg, "replay"}, paths...)...)
		if code != exitOK || !strings.HasPrefix(out, "no flips: 1 run,") {
			t.Errorf("replay %v: exit %d: %s %s", paths, code, out, errOut)
		}
		code, out, errOut = awaken(t, "", append([]string{"--config", cfg, "journal", "verify"}, paths...)...)
		if code != exitOK || out != once {
			t.Errorf("verify %v: exit %d: %q %s; want %q", paths, code, out, errOut, once)
		}
	}
}

// replay --since with a negative duration is a usage error: it used to be
// ignored, replaying the whole journal as if the flag were not given.
func TestReplaySinceMustNotBeNegative(t *testing.T) {
	_, cfg := journalProject(t)
	record(t, cfg, "read both")
	for _, tc := range []struct {
		since string
		code  int
		want  string
	}{
		{"-24h", exitUsage, "awaken-lua replay: --since -24h0m0s: a duration back from now, such as 24h"},
		{"24h", exitOK, ""},
	} {
		code, out, errOut := awaken(t, "", "--config", cfg, "replay", "--since", tc.since)
		if code != tc.code || !strings.Contains(errOut, tc.want) || (tc.code == exitUsage) != (out == "") {
			t.Errorf("--since %s: exit %d (want %d), stdout %q, stderr %q (want %q)", tc.since, code, tc.code, out, errOut, tc.want)
		}
	}
}

// Before anything was recorded, the configured journal directory does not
// exist: replay, journal verify and export say so and to record runs first
// (exit 2), rather than "give a journal directory" as if the path were
// wrong; and verify of a path that is not there is an error (exit 2), not
// the broken link exit 1 means.
func TestJournalNotRecordedYet(t *testing.T) {
	dir, cfg := journalProject(t)
	jdir := filepath.Join(dir, "journal")
	if _, err := os.Stat(jdir); !os.IsNotExist(err) {
		t.Fatalf("the project already has %s: %v", jdir, err)
	}
	for _, args := range [][]string{{"replay"}, {"journal", "verify"}, {"journal", "export", "run_x"}} {
		code, out, errOut := awaken(t, "", append([]string{"--config", cfg}, args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "the journal directory "+jdir+" does not exist yet") ||
			!strings.Contains(errOut, "record some runs first") {
			t.Errorf("%v: exit %d (want %d)\nstdout %q\nstderr %q", args, code, exitUsage, out, errOut)
		}
	}
	missing := filepath.Join(dir, "nowhere")
	if code, _, errOut := awaken(t, "", "--config", cfg, "journal", "verify", missing); code != exitUsage ||
		!strings.Contains(errOut, "journal_invalid: cannot read the journal "+missing) {
		t.Errorf("verify %s: exit %d (want %d): %s", missing, code, exitUsage, errOut)
	}
}

// A configuration without [journal] path gives replay and journal no
// journal to read: the error has its code, as every other journal error
// does, and says what to do.
func TestJournalNotConfiguredHasACode(t *testing.T) {
	_, cfg := journalProject(t)
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfg, []byte(strings.Replace(string(b), "[journal]\npath = \"journal\"\n", "", 1)), 0o644)
	for _, args := range [][]string{{"replay"}, {"journal", "verify"}, {"journal", "export", "run_x"}} {
		code, _, errOut := awaken(t, "", append([]string{"--config", cfg}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "journal_invalid: the configuration has no [journal] path") ||
			!strings.Contains(errOut, "set [journal] path") {
			t.Errorf("%v: exit %d (want %d), stderr %q", args, code, exitUsage, errOut)
		}
	}
}
