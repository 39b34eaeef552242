package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var sealFields = regexp.MustCompile(`"prev":"[^"]*","sum":"[^"]*",`)

// A line lost in the middle of a file (not a record, or missing from the
// chain) leaves out the later records of the runs in flight in the file,
// with one problem each; runs that ended before it, and runs begun after
// it, are read whole. Files (Read) and streams (Lines) alike.
func TestLostLineLeavesOutTheRunsInFlight(t *testing.T) {
	line := func(rec, run, phase string, n int) string {
		return fmt.Sprintf(`{"prev":"s%d","sum":"s%d","rec":%q,"run_id":%q,"phase":%q,"format":%d}`, n-1, n, rec, run, phase, Format)
	}
	full := []string{
		line(KindRun, "done", "", 1), line(KindEnd, "done", "", 2),
		line(KindRun, "a", "", 3), line(KindRun, "b", "", 4),
		line(KindPhase, "a", "step_start", 5), line(KindPhase, "b", "step_start", 6),
		line(KindPhase, "a", "before_inference", 7), // the line lost
		line(KindPhase, "b", "before_inference", 8), line(KindPhase, "a", "after_inference", 9),
		line(KindRun, "c", "", 10), line(KindPhase, "c", "step_start", 11),
	}
	for _, tc := range []struct {
		name string
		lost func([]string) []string
	}{
		{"not a record", func(l []string) []string { l[6] = "{torn"; return l }},
		{"missing", func(l []string) []string { return append(l[:6:6], l[7:]...) }},
		// Without seals only the line that does not read tells.
		{"not a record, unsealed", func(l []string) []string {
			for i := range l {
				l[i] = sealFields.ReplaceAllString(l[i], "")
			}
			l[6] = "{torn"
			return l
		}},
	} {
		lines := tc.lost(append([]string(nil), full...))
		check := func(src, want string, got []string, problems []Problem) {
			t.Helper()
			cut := 0
			for _, p := range problems {
				if strings.Contains(p.Msg, "its records from here on are left out") {
					cut++
					if !strings.Contains(p.Msg, "run a:") && !strings.Contains(p.Msg, "run b:") {
						t.Errorf("%s, %s: %v", tc.name, src, p)
					}
				}
			}
			if strings.Join(got, " ") != want || cut != 2 {
				t.Errorf("%s, %s: read %v with %d runs cut (%v); want %s with 2", tc.name, src, got, cut, problems, want)
			}
		}
		file := filepath.Join(t.TempDir(), "j.ndjson")
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var got []string
		note := func(_ Pos, r *Record) error {
			got = append(got, r.RunID+":"+map[bool]string{true: r.Phase, false: r.Rec}[r.Rec == KindPhase])
			return nil
		}
		problems, err := Read([]string{file}, note)
		if err != nil {
			t.Fatal(err)
		}
		check("file", "done:run done:end a:run b:run a:step_start b:step_start c:run c:step_start", got, problems)
		got = nil
		problems, err = Lines(func(yield func(Line) error) error {
			for i, l := range lines {
				if err := yield(Line{Stream: "s1", N: i + 1, Data: []byte(l)}); err != nil {
					return err
				}
			}
			return nil
		})(note)
		if err != nil {
			t.Fatal(err)
		}
		// Lines groups records by run, in the order the runs began.
		check("stream", "done:run done:end a:run a:step_start b:run b:step_start c:run c:step_start", got, problems)
	}
}

// A run goes on in its writer's next file when the writer rotates, so a
// line lost at the start of a file (not a record, removed from the file's
// start, the file emptied or removed) may be a phase of a run in flight
// in the writer's file before: its records from there on are left out, as
// for a line lost in the middle of a file. Read used to drive the run on
// without the phase, and replay blamed the candidate (a false "replay
// failed" flip). Another process's run in flight is read whole.
func TestLostLineAtARotationLeavesOutTheRunsInFlight(t *testing.T) {
	// r1 spans process 7's three files; r3 is process 8's, at the same
	// time; r2 begins after the damage.
	files := []struct {
		name  string
		lines []string
	}{
		{"journal-20260101T000000.000Z-7-0001.ndjson", chain("a", rl(KindRun, "r1", ""), rl(KindPhase, "r1", "step_start"))},
		{"journal-20260101T000000.100Z-8-0001.ndjson", chain("b", rl(KindRun, "r3", ""))},
		{"journal-20260101T000000.200Z-7-0002.ndjson", chain("c", rl(KindPhase, "r1", "before_inference"), rl(KindPhase, "r1", "after_inference"))},
		{"journal-20260101T000000.300Z-8-0002.ndjson", chain("d", rl(KindPhase, "r3", "step_start"), rl(KindEnd, "r3", ""))},
		{"journal-20260101T000000.400Z-7-0003.ndjson", chain("e", rl(KindPhase, "r1", "step_end"), rl(KindEnd, "r1", ""), rl(KindRun, "r2", ""), rl(KindEnd, "r2", ""))},
	}
	const damaged = 2 // process 7's second file
	for _, tc := range []struct {
		name   string
		damage func(lines []string) []string // nil: the file removed
		want   string                        // how the problem names the line lost
	}{
		{"not a record", func(l []string) []string { l[0] = "{torn"; return l }, "line 1 could not be read"},
		{"first line removed", func(l []string) []string { return l[1:] }, "lines before the first of"},
		{"file emptied", func(l []string) []string { return nil }, "lines before the first of"},
		{"file removed", nil, "lines before the first of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for i, f := range files {
				lines := append([]string(nil), f.lines...)
				if i == damaged {
					if tc.damage == nil {
						continue
					}
					lines = tc.damage(lines)
				}
				text := strings.Join(lines, "\n")
				if len(lines) > 0 {
					text += "\n"
				}
				if err := os.WriteFile(filepath.Join(dir, f.name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, problems := readAll(t, dir)
			var read []string
			for _, r := range got {
				read = append(read, r.RunID+":"+map[bool]string{true: r.Phase, false: r.Rec}[r.Rec == KindPhase])
			}
			if want := "r1:run r1:step_start r3:run r3:step_start r3:end r2:run r2:end"; strings.Join(read, " ") != want {
				t.Errorf("read %s\nwant %s", strings.Join(read, " "), want)
			}
			cut := 0
			for _, p := range problems {
				if strings.Contains(p.Msg, "its records from here on are left out") {
					cut++
					if !strings.Contains(p.Msg, "run r1: "+tc.want) {
						t.Errorf("problem %v; want run r1 and %q", p, tc.want)
					}
				}
			}
			if cut != 1 {
				t.Errorf("%d runs cut, want 1: %v", cut, problems)
			}
		})
	}
}

// rl is an unsealed line of a record.
func rl(rec, run, phase string) string {
	return fmt.Sprintf(`{"rec":%q,"run_id":%q,"phase":%q,"format":%d}`, rec, run, phase, Format)
}

// chain seals lines as a file's chain (sums named after id; Read does not
// check them).
func chain(id string, lines ...string) []string {
	out := make([]string, len(lines))
	prev := ""
	for i, l := range lines {
		sum := fmt.Sprintf("%s%d", id, i+1)
		out[i] = fmt.Sprintf(`{"prev":%q,"sum":%q,`, prev, sum) + l[1:]
		prev = sum
	}
	return out
}

// A reload that changes [journal] opens a new writer in the same process,
// which numbers its files from 1 again; runs in flight go on in its
// files, and nothing is lost: they are read whole.
func TestNewWriterOfTheSameProcessIsNoGap(t *testing.T) {
	dir := t.TempDir()
	for name, lines := range map[string][]string{
		"journal-20260101T000000.000Z-7-0001.ndjson": chain("a", rl(KindRun, "r1", "")),
		"journal-20260101T000000.100Z-7-0002.ndjson": chain("b", rl(KindPhase, "r1", "step_start")),
		"journal-20260101T000000.200Z-7-0001.ndjson": chain("c", rl(KindPhase, "r1", "step_end"), rl(KindEnd, "r1", "")),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, problems := readAll(t, dir)
	if len(got) != 4 || len(problems) != 0 {
		t.Fatalf("read %d records, problems %v; want 4 and none", len(got), problems)
	}
}
