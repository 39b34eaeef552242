package server

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/run"
)

// shadowSidecar serves dir's plugins with the plugins of candidate as the
// shadow generation, and the journal on.
func shadowSidecar(t testing.TB, dir, candidate string, maxConcurrent int) (*sidecar, *replay.Shadow) {
	t.Helper()
	cfg := filepath.Join(dir, "awaken.toml")
	ctx := context.Background()
	sh, err := host.Open(ctx, host.Options{ConfigPath: cfg, PluginDir: candidate, Candidate: true, Store: run.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	shadow := replay.NewShadow(func() (*run.Runtime, string, func()) {
		g := sh.Acquire()
		return g.Runtime, g.ID, g.Release
	}, nil, quietLog())
	h, err := host.Open(ctx, host.Options{ConfigPath: cfg, Tap: shadow})
	if err != nil {
		t.Fatal(err)
	}
	shadow.SetOut(h.Journal())
	srv := New(h, Options{Shadow: shadow, MaxConcurrent: maxConcurrent})
	sc := &sidecar{t: t, h: h, srv: srv, ts: httptest.NewServer(srv)}
	t.Cleanup(func() { sc.close(); shadow.Close(); sh.Close() })
	return sc, shadow
}

// waitIdle waits until the shadow has replayed everything the sidecar
// answered: it runs off the enforced path.
func waitIdle(t testing.TB, sh *replay.Shadow) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !sh.Idle() {
		if time.Now().After(deadline) {
			t.Fatal("the shadow never caught up with the enforced path")
		}
		time.Sleep(time.Millisecond)
	}
}

// drive runs one step with three calls through the sidecar API and returns
// the gate decisions the sidecar answered.
func drive(sc *sidecar, thread string) []string {
	id := sc.startRun(map[string]any{"thread_id": thread,
		"messages": []any{map[string]any{"role": "user", "content": "remind me to tidy up"}},
		"tools":    []any{map[string]any{"name": "shell"}, map[string]any{"name": "ls"}, map[string]any{"name": "add"}}})
	sc.phase(id, "step_start", nil)
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	calls := []map[string]any{
		call("c1", "add", map[string]any{"a": 1}),
		call("c2", "ls", map[string]any{"dir": "src"}),
		call("c3", "shell", map[string]any{"cmd": "rm -rf build"}),
	}
	sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{calls[0], calls[1], calls[2]}}})
	var out []string
	for _, c := range calls {
		r := sc.phase(id, "tool_gate", map[string]any{"call": c})
		out = append(out, r.str("decision")+":"+r.str("reason"))
		if r.str("decision") == "allow" {
			sc.phase(id, "before_tool_execute", map[string]any{"call": c})
			sc.phase(id, "after_tool_execute", map[string]any{"call": c, "result": map[string]any{"status": "success", "data": "ok"}})
		} else {
			sc.phase(id, "after_tool_execute", map[string]any{"call": c, "result": map[string]any{"status": "success"}})
		}
	}
	sc.phase(id, "run_end", nil) // the rm block ended the run
	return out
}

// A shadow that decides differently changes none of the enforced answers,
// and every disagreement is counted, journaled and reported.
func TestShadowCountsDisagreementsAndEnforcesNothing(t *testing.T) {
	candidate := t.TempDir()
	// The candidate lets rm through, blocks add, and reminds differently.
	cand := strings.Replace(policyLua, `tostring(call.args.cmd):find("rm", 1, true)`, `false`, 1)
	cand = strings.Replace(cand, `if call.name == "deploy" and not call.resume then`,
		"if call.name == \"add\" then return awaken.block(\"no sums\") end\n  if call.name == \"deploy\" and not call.resume then", 1)
	cand = strings.Replace(cand, "Reminder: tests first.", "Reminder: lint first.", 1)
	writeFile(t, filepath.Join(candidate, "policy.lua"), cand)

	plain := newSidecar(t, project(t, "", nil), Options{})
	want := drive(plain, "t1")

	dir := project(t, "\n[journal]\npath = \"journal\"\n", nil)
	sc, shadow := shadowSidecar(t, dir, candidate, 0)
	got := drive(sc, "t1")
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the shadow changed the enforced answers:\n got %v\nwant %v", got, want)
	}
	if want[2] != "block:rm is not allowed" {
		t.Fatalf("the enforced policy should block rm: %v", want)
	}

	// The context differs first (before_inference), so the shadow stops
	// following that run there: one disagreement per run. A second run
	// without the reminder gets as far as the gates.
	waitIdle(t, shadow)
	r := sc.must(200, "GET", "/v1/shadow", nil)
	var sum struct {
		Enabled       bool
		Disagreements int
		By            []replay.Disagreement
	}
	json.Unmarshal(r.raw, &sum)
	if !sum.Enabled || sum.Disagreements != 1 || len(sum.By) != 1 || sum.By[0].From != "context" || sum.By[0].Plugin != "policy" {
		t.Fatalf("after one run: %s", r.raw)
	}

	id := sc.startRun(map[string]any{"thread_id": "t2", "messages": []any{map[string]any{"role": "user", "content": "tidy up"}},
		"tools": []any{map[string]any{"name": "add"}}})
	sc.phase(id, "step_start", nil)
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("c1", "add", nil)}}})
	if g := sc.phase(id, "tool_gate", map[string]any{"call": call("c1", "add", nil)}); g.str("decision") != "allow" {
		t.Fatalf("the shadow's block was enforced: %s", g.raw)
	}
	waitIdle(t, shadow)
	r = sc.must(200, "GET", "/v1/shadow", nil)
	json.Unmarshal(r.raw, &sum)
	if sum.Disagreements != 2 || !strings.Contains(string(r.raw), `"from":"allow","n":1,"plugin":"policy","to":"block"`) &&
		!strings.Contains(string(r.raw), `"plugin":"policy","from":"allow","to":"block","n":1`) {
		t.Fatalf("after the second run: %s", r.raw)
	}
	if v := sc.metricValue(`awaken_shadow_disagreements_total{plugin="policy",from="allow",to="block"}`); v != 1 {
		t.Fatalf("metric = %v", v)
	}
	sc.close()
	var shadows []string
	journal.Read([]string{filepath.Join(dir, "journal")}, func(_ journal.Pos, rec *journal.Record) error {
		if rec.Rec == journal.KindShadow {
			shadows = append(shadows, rec.Shadow.Kind)
		}
		return nil
	})
	if strings.Join(shadows, ",") != "context changed,allow->block" {
		t.Fatalf("journaled shadow records: %v", shadows)
	}
}

// A candidate whose hook fails changes no enforced answer either.
func TestShadowFailureIsOnlyCounted(t *testing.T) {
	candidate := t.TempDir()
	writeFile(t, filepath.Join(candidate, "policy.lua"), strings.Replace(policyLua,
		`p:on("run_start", function(ctx) ctx:update(visits, 1) end)`,
		`p:on("run_start", function(ctx) error("the candidate is broken") end)`, 1))
	plain := newSidecar(t, project(t, "", nil), Options{})
	want := drive(plain, "t1")
	sc, shadow := shadowSidecar(t, project(t, "", nil), candidate, 0)
	if got := drive(sc, "t1"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %v, want %v", got, want)
	}
	waitIdle(t, shadow)
	r := sc.must(200, "GET", "/v1/shadow", nil)
	if !strings.Contains(string(r.raw), `"from":"termination"`) && !strings.Contains(string(r.raw), `"termination"`) {
		t.Fatalf("a failing candidate should count as a termination change: %s", r.raw)
	}
}

// A run the sidecar forgets in the middle of a step (deleted, or let go of
// past max_runs with the memory store) gets an end record, "abandoned": a
// shadow stops following it and replay forgets it.
func TestForgottenMidStepRunEndsInTheJournal(t *testing.T) {
	ends := func(t *testing.T, dir string) map[string]string {
		t.Helper()
		got := map[string]string{}
		journal.Read([]string{filepath.Join(dir, "journal")}, func(_ journal.Pos, rec *journal.Record) error {
			if rec.Rec == journal.KindEnd {
				got[rec.RunID] = rec.Termination
			}
			return nil
		})
		return got
	}
	t.Run("deleted", func(t *testing.T) {
		candidate := t.TempDir()
		writeFile(t, filepath.Join(candidate, "policy.lua"), policyLua)
		dir := project(t, "\n[journal]\npath = \"journal\"\n", nil)
		sc, shadow := shadowSidecar(t, dir, candidate, 0)
		id := sc.startRun(map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		sc.phase(id, "step_start", nil)
		sc.must(204, "DELETE", "/v1/runs/"+id, nil)
		waitIdle(t, shadow)
		if n := shadow.Summary().Following; n != 0 {
			t.Errorf("the shadow still follows %d runs", n)
		}
		sc.close()
		if got := ends(t, dir)[id]; got != run.Abandoned {
			t.Errorf("the deleted run's end record: %q, want %q", got, run.Abandoned)
		}
	})
	t.Run("past max_runs", func(t *testing.T) {
		dir := project(t, "\n[journal]\npath = \"journal\"\n", nil)
		sc := newSidecar(t, dir, Options{Log: quietLog(), MaxRuns: 1})
		first := sc.startRun(map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		sc.phase(first, "step_start", nil)
		sc.startRun(map[string]any{"messages": []any{map[string]any{"role": "user", "content": "again"}}})
		sc.close()
		if got := ends(t, dir)[first]; got != run.Abandoned {
			t.Errorf("the run let go of mid-step: end %q, want %q", got, run.Abandoned)
		}
	})
}
