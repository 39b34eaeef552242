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
