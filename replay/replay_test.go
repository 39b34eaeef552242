package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/model/scripted"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/run"
)

// project writes an awaken.toml whose plugins are testdata/<plugins>, with
// the journal on, and returns its path and the journal directory.
func project(t testing.TB, plugins string, extra string) (cfg, journalDir string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	for _, f := range []string{"notes.txt", "README.md", "secret.txt"} {
		os.WriteFile(filepath.Join(ws, f), []byte("contents of "+f), 0o644)
	}
	abs, _ := filepath.Abs(filepath.Join("testdata", plugins))
	toml := fmt.Sprintf(`plugin_dir = %q
[tools]
root = "ws"
[journal]
path = "journal"
%s
[agents.default]
tools = ["fs_read"]
`, abs, extra)
	cfg = filepath.Join(dir, "awaken.toml")
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, filepath.Join(dir, "journal")
}

func read(id, path string) model.ToolCall {
	return model.ToolCall{ID: id, Name: "fs_read", Args: map[string]any{"path": path}}
}

// recordRuns drives three runs through the policy of cfg and closes the
// host, which writes the journal out.
func recordRuns(t *testing.T, cfg string) {
	t.Helper()
	ctx := context.Background()
	h, err := host.Open(ctx, host.Options{ConfigPath: cfg})
	if err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		prompt string
		turns  []scripted.Turn
	}{
		{"read the files", []scripted.Turn{
			{Text: "reading", ToolCalls: []model.ToolCall{read("c1", "README.md"), read("c2", "notes.txt")}},
			{Text: "both read"},
		}},
		{"use the context", []scripted.Turn{{Text: "noted"}}},
		{"please stop", []scripted.Turn{{Text: "bye"}}},
		{"read the secret", []scripted.Turn{{Text: "trying", ToolCalls: []model.ToolCall{read("c1", "secret.txt")}}}},
	}
	for _, r := range runs {
		g := h.Acquire()
		res, err := g.Runtime.Run(ctx, run.Request{Prompt: r.prompt, Model: scripted.New(r.turns)})
		g.Release()
		if err != nil || res.Err != nil {
			t.Fatalf("run %q: %v %v", r.prompt, err, res.Err)
		}
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

func replayWith(t *testing.T, cfg, plugins string, paths ...string) *replay.Report {
	t.Helper()
	return replaySource(t, cfg, plugins, journal.FileSource(paths...))
}

func replaySource(t *testing.T, cfg, plugins string, src journal.Source) *replay.Report {
	t.Helper()
	ctx := context.Background()
	abs, _ := filepath.Abs(filepath.Join("testdata", plugins))
	h, err := host.Open(ctx, host.Options{ConfigPath: cfg, PluginDir: abs, Candidate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	g := h.Acquire()
	defer g.Release()
	rep, err := replay.RunSource(ctx, g.Runtime, src, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func kinds(rep *replay.Report) []string {
	var out []string
	for _, f := range rep.Flips {
		out = append(out, fmt.Sprintf("%s@%s step %d %s", f.Kind, f.Phase, f.Step, f.Plugin))
	}
	sort.Strings(out)
	return out
}

// Runs recorded with one policy and replayed against a changed one report
// exactly the flips the change makes: a gate flip, a context change and a
// termination change. Replayed against the same plugins, nothing.
func TestReplayReportsExactlyTheFlips(t *testing.T) {
	cfg, jdir := project(t, "v1", "")
	recordRuns(t, cfg)

	same := replayWith(t, cfg, "v1", jdir)
	if len(same.Flips) != 0 || same.Runs != 4 || same.Steps != 5 {
		t.Fatalf("the same plugins: runs %d steps %d flips %v", same.Runs, same.Steps, kinds(same))
	}

	rep := replayWith(t, cfg, "v2", jdir)
	want := []string{
		"allow->block@tool_gate step 1 policy",
		"context changed@before_inference step 1 policy",
		"termination changed@after_inference step 1 ",
	}
	if got := kinds(rep); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("flips:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, f := range rep.Flips {
		switch f.Kind {
		case "allow->block":
			if f.CallID != "c2" || f.Tool != "fs_read" || f.Args["path"] != "notes.txt" || !strings.Contains(f.To, "notes.txt is off limits") {
				t.Errorf("gate flip: %+v", f)
			}
		case "termination changed":
			if f.From != "(none)" || f.To != "stopped:asked_to_stop" {
				t.Errorf("termination flip: %+v", f)
			}
		case "context changed":
			if !strings.Contains(f.From, "cite files (at ") || !strings.Contains(f.To, "always cite files") {
				t.Errorf("context flip: %+v", f)
			}
		}
	}
	var text strings.Builder
	rep.WriteText(&text)
	for _, s := range []string{"allow->block 1 · context changed 1 · termination changed 1", "samples:", "call c2 fs_read"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("the report lacks %q:\n%s", s, text.String())
		}
	}
	if !rep.Fails(nil) || rep.Fails([]string{"block->allow"}) || !rep.Fails([]string{"context changed"}) {
		t.Error("Fails does not follow --fail-on")
	}
	// --fail-on takes every kind a flip has (it refuses the others).
	for _, f := range rep.Flips {
		if err := replay.CheckKinds([]string{f.Kind}); err != nil {
			t.Error(err)
		}
	}
}

// A decision that depends on a masked field is reported as such, not as a
// flip; a decision that differs whatever the masked value is a flip.
func TestReplayReportsMaskedReadsApart(t *testing.T) {
	cfg, jdir := project(t, "v1", `mask = ["password"]`)
	ctx := context.Background()
	h, err := host.Open(ctx, host.Options{ConfigPath: cfg})
	if err != nil {
		t.Fatal(err)
	}
	withPW := func(id, path string) model.ToolCall {
		c := read(id, path)
		c.Args["password"] = "hunter2"
		return c
	}
	g := h.Acquire()
	res, err := g.Runtime.Run(ctx, run.Request{Prompt: "read", Model: scripted.New([]scripted.Turn{
		{ToolCalls: []model.ToolCall{withPW("c1", "README.md")}},
		{ToolCalls: []model.ToolCall{withPW("c2", "notes.txt")}},
		{Text: "done"},
	})})
	if err != nil || res.Termination != "natural" {
		t.Fatalf("recording: %v %s", err, res.Termination)
	}
	// A second run reads notes.txt first, which the candidate blocks
	// whatever the password is.
	res, err = g.Runtime.Run(ctx, run.Request{Prompt: "read", Model: scripted.New([]scripted.Turn{
		{ToolCalls: []model.ToolCall{withPW("c9", "notes.txt")}}, {Text: "done"}})})
	g.Release()
	if err != nil || res.Termination != "natural" {
		t.Fatalf("recording: %v %s", err, res.Termination)
	}
	h.Close()
	rep := replayWith(t, cfg, "reads-password", jdir)
	if len(rep.Flips) != 2 || rep.Flips[0].Kind != replay.ReadsMasked || rep.Flips[0].CallID != "c1" ||
		!strings.Contains(rep.Flips[0].Detail, "call.args.password") {
		t.Fatalf("flips: %+v", rep.Flips)
	}
	if f := rep.Flips[1]; f.Kind != "allow->block" || f.CallID != "c9" || f.Args["password"] != "[masked]" {
		t.Fatalf("the decision that does not depend on the mask: %+v", f)
	}
	if by := rep.ByKind(); len(by) != 1 || by[0].Kind != "allow->block" || len(rep.Masked()) != 1 {
		t.Fatalf("by kind %+v, masked %d", by, len(rep.Masked()))
	}
}

// phaseRecords counts the phase records of a journal and reports whether
// each run's end record is its last.
func phaseRecords(t *testing.T, path string) (n int, endLast bool) {
	t.Helper()
	ended := map[string]bool{}
	endLast = true
	_, err := journal.Read([]string{path}, func(_ journal.Pos, r *journal.Record) error {
		if ended[r.RunID] {
			endLast = false
		}
		switch r.Rec {
		case journal.KindPhase:
			n++
		case journal.KindEnd:
			ended[r.RunID] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, endLast
}

// Every phase record of a run is replayed, run_end's too: with the same
// plugins none is skipped, and a candidate whose run_end hook fails shows
// the termination change there. endFirst is a journal written before end
// was a run's last record (its run_end record comes after the end), as
// journals users already have are; it replays the same.
func TestReplayComparesRunEnd(t *testing.T) {
	cfg, jdir := project(t, "v1", "")
	recordRuns(t, cfg)
	endFirst := filepath.Join("testdata", "end-first-journal")
	if _, endLast := phaseRecords(t, endFirst); endLast {
		t.Fatal("the end-first journal has its end records last")
	}
	for _, path := range []string{jdir, endFirst} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			n, endLast := phaseRecords(t, path)
			if path == jdir && !endLast {
				t.Error("a record of a run follows its end record")
			}
			same := replayWith(t, cfg, "v1", path)
			if same.Skipped != 0 || same.Phases != n || len(same.Flips) != 0 || same.Runs != 4 {
				t.Fatalf("the same plugins: %d runs, %d of %d phases replayed, %d skipped, flips %v",
					same.Runs, same.Phases, n, same.Skipped, kinds(same))
			}
			rep := replayWith(t, cfg, "run-end", path)
			if got := kinds(rep); len(got) != 1 || got[0] != "termination changed@run_end step 2 " {
				t.Fatalf("flips: %v", got)
			}
			if f := rep.Flips[0]; f.From != "natural" || f.To != "error:hook_failed" || !strings.Contains(f.Detail, "cannot summarize the files read") {
				t.Fatalf("run_end flip: %+v", f)
			}
			// verify and export read either order.
			if _, _, err := journal.Verify([]string{path}); err != nil {
				t.Fatal(err)
			}
			ended := ends(t, path)
			if len(ended) != 4 {
				t.Fatalf("end records: %v", ended)
			}
			for id, term := range ended {
				var b strings.Builder
				if err := replay.Export(&b, id, journal.FileSource(path), replay.Configs{}); err != nil {
					t.Fatalf("export %s: %v", id, err)
				}
				if !strings.Contains(b.String(), fmt.Sprintf("t.eq(r.termination, %q)", term)) {
					t.Fatalf("export %s does not assert %s:\n%s", id, term, b.String())
				}
			}
			// Runs --since leaves out are left out to their last record.
			h, err := host.Open(context.Background(), host.Options{ConfigPath: cfg, Candidate: true})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			g := h.Acquire()
			defer g.Release()
			later, err := replay.Run(context.Background(), g.Runtime, []string{path}, replay.Options{Since: time.Now().Add(time.Hour)})
			if err != nil || later.Runs != 0 || later.Phases != 0 || later.Skipped != 0 {
				t.Fatalf("--since after every run: %+v, %v", later, err)
			}
		})
	}
}

// ends maps each run of a journal to its recorded termination.
func ends(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if _, err := journal.Read([]string{path}, func(_ journal.Pos, r *journal.Record) error {
		if r.Rec == journal.KindEnd {
			out[r.RunID] = r.Termination
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// The report's counts read as English: one run, not "1 runs".
func TestReportCountsAgree(t *testing.T) {
	flip := journal.Flip{Kind: "allow->block", RunID: "run_1", Step: 1, Phase: journal.ToolGate}
	masked := journal.Flip{Kind: replay.ReadsMasked, RunID: "run_1", Step: 1, Phase: journal.ToolGate}
	for _, tc := range []struct {
		rep     replay.Report
		summary string
		text    []string
	}{
		{replay.Report{Runs: 1, Steps: 1, Phases: 1, Skipped: 1}, "replay 1 run: 0 flips",
			[]string{"no flips: 1 run, 1 step, 1 phase replayed\n", "\n1 phase record skipped: its run's start is not"}},
		{replay.Report{Runs: 2, Steps: 2, Phases: 2, Skipped: 2}, "replay 2 runs: 0 flips",
			[]string{"no flips: 2 runs, 2 steps, 2 phases replayed\n", "\n2 phase records skipped: their run's start is not"}},
		{replay.Report{Runs: 1, Steps: 1, Phases: 3, Flips: []journal.Flip{flip, masked}}, "replay 1 run: 1 flip",
			[]string{"\n1 flip in 1 run, 1 step, 3 phases replayed\n", "\n1 decision reads a masked field (not counted as a flip):\n"}},
		{replay.Report{Runs: 3, Steps: 4, Phases: 9, Flips: []journal.Flip{flip, flip, masked, masked}}, "replay 3 runs: 2 flips",
			[]string{"\n2 flips in 3 runs, 4 steps, 9 phases replayed\n", "\n2 decisions read masked fields (not counted as flips):\n"}},
	} {
		if got := tc.rep.Summary(); got != tc.summary {
			t.Errorf("summary %q, want %q", got, tc.summary)
		}
		var b strings.Builder
		tc.rep.WriteText(&b)
		for _, w := range tc.text {
			if !strings.Contains(b.String(), w) {
				t.Errorf("the report lacks %q:\n%s", w, b.String())
			}
		}
	}
}

// A journal written before end was a run's last record, replayed against a
// candidate that flips: the run is forgotten at its flip, and the phase
// record after its end is not one whose start is missing.
func TestReplayOldOrderFlipSkipsNothing(t *testing.T) {
	cfg, jdir := project(t, "v1", "")
	recordRuns(t, cfg)
	for _, p := range []string{jdir, filepath.Join("testdata", "end-first-journal")} {
		rep := replayWith(t, cfg, "v2", p)
		if len(rep.Flips) == 0 || rep.Skipped != 0 {
			t.Errorf("%s: flips %v, %d phase records skipped; want flips and none skipped (every run's header is in the journal)",
				filepath.Base(p), kinds(rep), rep.Skipped)
		}
	}
}

// records is a journal source that holds recs.
func records(recs []*journal.Record) journal.Source {
	return func(fn func(journal.Pos, *journal.Record) error) ([]journal.Problem, error) {
		for _, r := range recs {
			if err := fn(journal.Pos{}, r); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
}

// A run its host abandoned mid-step has an end record but no ending a
// test could assert: export refuses it, as a run that did not end.
func TestExportRefusesAnAbandonedRun(t *testing.T) {
	recs := []*journal.Record{
		{Rec: journal.KindRun, RunID: "r1", Format: 1},
		{Rec: journal.KindPhase, RunID: "r1", Phase: journal.RunStart, Input: &journal.Input{}},
		{Rec: journal.KindPhase, RunID: "r1", Phase: journal.StepStart, Step: 1},
		{Rec: journal.KindEnd, RunID: "r1", Termination: run.Abandoned},
	}
	src := records(recs)
	var out strings.Builder
	err := replay.Export(&out, "r1", src, replay.Configs{})
	if errs.CodeOf(err) != errs.JournalInvalid || !strings.Contains(err.Error(), "abandoned") {
		t.Fatalf("Export of an abandoned run: %v, wrote %q", err, out.String())
	}
}

// A decision that depends on the working directory an agent reported
// (ctx.run.cwd, which a hook adapter sets per event) replays the same:
// every phase record carries the directory its hooks read. The same read
// of /work/a/.env is allowed from /work/b and blocked from /work/a, and
// the directory changes between the start of a run and its gates, and
// between two gates of one step.
func TestReplayReadsTheRecordedCwd(t *testing.T) {
	cfg, jdir := project(t, "cwd", "")
	ctx := context.Background()
	h, err := host.Open(ctx, host.Options{ConfigPath: cfg})
	if err != nil {
		t.Fatal(err)
	}
	read := func(id, path string) model.ToolCall {
		return model.ToolCall{ID: id, Name: "fs_read", Args: map[string]any{"path": path}}
	}
	type gated struct {
		cwd  string
		call model.ToolCall
		want string
	}
	runs := []struct {
		start string // the directory of the event that starts the run
		calls []gated
	}{
		{"/work/b", []gated{{"/work/b", read("c1", "/work/a/.env"), "allow"}, {"/work/a", read("c2", "/work/a/.env"), "block"}}},
		{"/work/a", []gated{{"/work/b", read("c1", "/work/a/.env"), "allow"}, {"/work/b", read("c2", "src/x.go"), "allow"}}},
		{"/work/a", []gated{{"/work/a", read("c1", ".env"), "block"}}},
	}
	for i, r := range runs {
		calls := r.calls
		g := h.Acquire()
		tools := []model.ToolSpec{{Name: "fs_read"}}
		s, _, err := g.Runtime.Start(ctx, run.StartOptions{Tools: tools, Cwd: r.start,
			Messages: []model.Message{{Role: model.RoleUser, Content: "read"}}})
		if err != nil {
			t.Fatal(err)
		}
		var resp model.Response
		for _, c := range calls {
			resp.ToolCalls = append(resp.ToolCalls, c.call)
		}
		if _, err := s.StepStart(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.BeforeInference(ctx, model.Request{Tools: s.HostTools()}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AfterInference(ctx, resp); err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			s.SetCwd(c.cwd) // the call's own event
			d, _, err := s.ToolGate(ctx, c.call)
			if err != nil || d.Decision.String() != c.want {
				t.Fatalf("run %d, %s in %s: %s %v, want %s", i, c.call.Args["path"], c.cwd, d.Decision, err, c.want)
			}
			if c.want == "allow" {
				if _, err := s.BeforeToolExecute(ctx, c.call); err != nil {
					t.Fatal(err)
				}
			}
			// The host's result; a blocked call gets the gate's.
			if _, _, err := s.AfterToolExecute(ctx, c.call, model.Success("x")); err != nil {
				t.Fatal(err)
			}
		}
		if s.Termination() == "" { // a step that answers, then the end
			_, err := s.StepEnd(ctx)
			if err == nil {
				_, err = s.StepStart(ctx)
			}
			if err == nil {
				_, _, err = s.BeforeInference(ctx, model.Request{Tools: s.HostTools()})
			}
			if err == nil {
				_, err = s.AfterInference(ctx, model.Response{Text: "read"})
			}
			if err == nil {
				_, err = s.StepEnd(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.RunEnd(ctx); err != nil {
			t.Fatal(err)
		}
		g.Release()
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	rep := replayWith(t, cfg, "cwd", jdir)
	if len(rep.Flips) != 0 || rep.Runs != 3 || rep.Phases < 15 {
		t.Fatalf("replay: runs %d phases %d flips %v", rep.Runs, rep.Phases, kinds(rep))
	}
	var gates []string
	if _, err := journal.Read([]string{jdir}, func(_ journal.Pos, r *journal.Record) error {
		if r.Phase == journal.ToolGate {
			gates = append(gates, r.Input.Cwd+" "+r.Decisions[0].Decision.String())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"/work/b allow", "/work/a block", "/work/b allow", "/work/b allow", "/work/a block"}
	if !slices.Equal(gates, want) {
		t.Fatalf("the journal's gates: %q, want %q", gates, want)
	}
}

// A run an agent's hooks drove carries the agent's working directory,
// which the harness's h:run cannot give its hooks: export refuses it, as
// it refuses other runs a host drove one call at a time.
func TestExportRefusesARunWithACwd(t *testing.T) {
	recs := []*journal.Record{
		{Rec: journal.KindRun, RunID: "r1", Format: 1},
		{Rec: journal.KindPhase, RunID: "r1", Phase: journal.RunStart, Input: &journal.Input{Cwd: "/w"}},
		{Rec: journal.KindPhase, RunID: "r1", Phase: journal.RunEnd, Input: &journal.Input{Cwd: "/w"}},
		{Rec: journal.KindEnd, RunID: "r1", Termination: "natural"},
	}
	src := records(recs)
	var out strings.Builder
	err := replay.Export(&out, "r1", src, replay.Configs{})
	if errs.CodeOf(err) != errs.JournalInvalid || !strings.Contains(err.Error(), "agent's hooks") {
		t.Fatalf("Export of a run with a cwd: %v, wrote %q", err, out.String())
	}
	recs[1].Input.Cwd, recs[2].Input.Cwd = "", ""
	if err := replay.Export(&out, "r1", src, replay.Configs{}); err != nil {
		t.Fatalf("Export of the run without one: %v", err)
	}
}

// A record the writer shortened (too large for a reader: its input left
// out, listed in "omitted") cannot be driven as it ran: replay reports it
// as a problem at its place and stops following its run there, rather
// than drive the candidate with an input that is not all there; the other
// runs are replayed. Export refuses the run.
func TestReplayStopsAtARecordTheWriterShortened(t *testing.T) {
	cfg, jdir := project(t, "v1", "")
	recordRuns(t, cfg)
	full := replayWith(t, cfg, "v1", jdir)
	type item struct {
		pos journal.Pos
		rec *journal.Record
	}
	var items []item
	if _, err := journal.Read([]string{jdir}, func(p journal.Pos, r *journal.Record) error {
		items = append(items, item{p, r})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var cut item
	for _, it := range items {
		if it.rec.Phase == journal.AfterInference {
			cut = it
			break
		}
	}
	cut.rec.Input, cut.rec.Omitted = nil, []string{"input"}
	src := func(fn func(journal.Pos, *journal.Record) error) ([]journal.Problem, error) {
		for _, it := range items {
			if err := fn(it.pos, it.rec); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	rep := replaySource(t, cfg, "v1", src)
	if len(rep.Flips) != 0 || rep.Runs != full.Runs || rep.Phases >= full.Phases {
		t.Fatalf("flips %v, runs %d phases %d (all of them: %d %d)", kinds(rep), rep.Runs, rep.Phases, full.Runs, full.Phases)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Pos != cut.pos || !strings.Contains(rep.Problems[0].Msg, "left out this record's input") {
		t.Fatalf("problems %v, want one at %s", rep.Problems, cut.pos)
	}
	var text strings.Builder
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "warning: "+cut.pos.String()) {
		t.Errorf("the report does not warn of the shortened record:\n%s", text.String())
	}
	var out strings.Builder
	err := replay.Export(&out, cut.rec.RunID, src, replay.Configs{})
	if errs.CodeOf(err) != errs.JournalInvalid || !strings.Contains(err.Error(), "left out the input of its after_inference record") {
		t.Fatalf("Export of the run: %v, wrote %q", err, out.String())
	}
}

// Context messages are placed in a target by priority: a candidate that
// reorders a target's messages changes what the agent reads, which is a
// flip; one whose priorities only reorder messages of different targets
// changes nothing the agent sees.
func TestReplayComparesContextOrder(t *testing.T) {
	cfg, jdir := project(t, "order-a", "")
	recordRuns(t, cfg)
	if rep := replayWith(t, cfg, "order-a", jdir); len(rep.Flips) != 0 {
		t.Fatalf("the same plugins: flips %v", kinds(rep))
	}
	if rep := replayWith(t, cfg, "order-c", jdir); len(rep.Flips) != 0 {
		t.Fatalf("a suffix message alone in its place, its priority changed: flips %v", kinds(rep))
	}
	rep := replayWith(t, cfg, "order-b", jdir)
	if len(rep.Flips) != 4 || rep.Flips[0].Kind != replay.ContextChanged || rep.Flips[0].From == rep.Flips[0].To {
		t.Fatalf("two system messages swapped: flips %v, first %+v", kinds(rep), rep.Flips)
	}
}

// Replaying through a runtime that audits (dev replays the journal through
// the generation it just loaded, audit sink and all) must not write the
// audit log: its records would read as decisions enforced a second time,
// some of them never enforced at all.
func TestReplayWritesNoAuditRecords(t *testing.T) {
	cfg, jdir := project(t, "v1", "[audit]\npath = \"audit.jsonl\"\n[plugins.audit]\n")
	auditFile := filepath.Join(filepath.Dir(cfg), "audit.jsonl")
	recordRuns(t, cfg)
	lines := func() int {
		b, err := os.ReadFile(auditFile)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
	before := lines()
	if before == 0 {
		t.Fatal("the recorded runs wrote no audit records")
	}
	ctx := context.Background()
	h, err := host.Open(ctx, host.Options{ConfigPath: cfg})
	if err != nil {
		t.Fatal(err)
	}
	g := h.Acquire()
	rep, err := replay.Run(ctx, g.Runtime, []string{jdir}, replay.Options{})
	g.Release()
	if err != nil || rep.Runs != 4 || len(rep.Flips) != 0 {
		t.Fatalf("replay: %v, %d runs, flips %v", err, rep.Runs, kinds(rep))
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if after := lines(); after != before {
		t.Fatalf("replay wrote %d audit records", after-before)
	}
}

// A shadow's disagreement is journaled beside the run's records, with the
// phase it was about: export reads the run's own records only, so a
// disagreement at run_start does not take the place of the run's start
// (its conversation).
func TestExportIgnoresShadowRecords(t *testing.T) {
	msgs := []model.Message{{Role: model.RoleUser, Content: "hello there"}}
	recs := []*journal.Record{
		{Rec: journal.KindRun, RunID: "r1", Format: 1},
		{Rec: journal.KindPhase, RunID: "r1", Phase: journal.RunStart, Input: &journal.Input{Messages: msgs}},
		{Rec: journal.KindShadow, RunID: "r1", Phase: journal.RunStart, Shadow: &journal.Flip{Kind: replay.TerminationChanged}},
		{Rec: journal.KindPhase, RunID: "r1", Phase: journal.RunEnd, Input: &journal.Input{}},
		{Rec: journal.KindEnd, RunID: "r1", Termination: "natural"},
	}
	var out strings.Builder
	if err := replay.Export(&out, "r1", records(recs), replay.Configs{}); err != nil || !strings.Contains(out.String(), "hello there") {
		t.Fatalf("Export of a run with shadow records: %v\n%s", err, out.String())
	}
}

// A masked field inside a list of the arguments is masked in the journal
// as one outside is: a candidate that reads it decides on the mask, which
// replay reports apart, not as a flip.
func TestReplayReportsMaskedReadsInAListApart(t *testing.T) {
	cfg, jdir := project(t, "v1", `mask = ["password"]`)
	ctx := context.Background()
	h, err := host.Open(ctx, host.Options{ConfigPath: cfg})
	if err != nil {
		t.Fatal(err)
	}
	c := read("c1", "README.md")
	c.Args["creds"] = []any{map[string]any{"user": "ann", "password": "hunter2"}}
	g := h.Acquire()
	res, err := g.Runtime.Run(ctx, run.Request{Prompt: "read", Model: scripted.New([]scripted.Turn{
		{ToolCalls: []model.ToolCall{c}}, {Text: "done"}})})
	g.Release()
	if err != nil || res.Termination != "natural" {
		t.Fatalf("recording: %v %s", err, res.Termination)
	}
	h.Close()
	rep := replayWith(t, cfg, "reads-listed-password", jdir)
	if len(rep.Flips) != 1 || rep.Flips[0].Kind != replay.ReadsMasked || rep.Flips[0].CallID != "c1" {
		t.Fatalf("flips: %+v", rep.Flips)
	}
}

// Each value replay puts in a masked field's place is tried on the
// recorded arguments: a candidate that decides the same on the masked
// value and on a string in its place (both long) but otherwise on another
// kind of value reads the masked field, which is reported apart.
func TestReplayProbesEveryValueInAMaskedFieldsPlace(t *testing.T) {
	cfg, jdir := project(t, "v1", `mask = ["password"]`)
	ctx := context.Background()
	h, err := host.Open(ctx, host.Options{ConfigPath: cfg})
	if err != nil {
		t.Fatal(err)
	}
	c := read("c1", "README.md")
	c.Args["password"] = "abc"
	g := h.Acquire()
	res, err := g.Runtime.Run(ctx, run.Request{Prompt: "read", Model: scripted.New([]scripted.Turn{
		{ToolCalls: []model.ToolCall{c}}, {Text: "done"}})})
	g.Release()
	if err != nil || res.Termination != "natural" {
		t.Fatalf("recording: %v %s", err, res.Termination)
	}
	h.Close()
	rep := replayWith(t, cfg, "reads-password-length", jdir)
	if len(rep.Flips) != 1 || rep.Flips[0].Kind != replay.ReadsMasked || rep.Flips[0].CallID != "c1" {
		t.Fatalf("flips: %+v", rep.Flips)
	}
}
