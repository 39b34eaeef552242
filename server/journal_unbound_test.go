package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/replay"
)

// TestAskApprovedLateReplaysAsItRan: a call answered "ask" whose user
// approves it after the plugin's ticket timeout runs (its expiry was
// lifted, Session.Unbound). Replayed through the same plugins, by a
// shadow and by replay of the journal, the run must agree with itself:
// the lifted expiry is part of what the run received, so the candidate
// must not cancel the late approval as expired.
func TestAskApprovedLateReplaysAsItRan(t *testing.T) {
	lua := strings.Replace(ccPolicyLua, `awaken.suspend { message = "Push to the remote?" }`,
		`awaken.suspend { message = "Push to the remote?", timeout = "30ms" }`, 1)
	dir := project(t, "\n[journal]\npath = \"journal\"\n", map[string]string{"ccpolicy.lua": lua})
	sc, shadow := shadowSidecar(t, dir, filepath.Join(dir, "scripts"), 0)
	s := map[string]any{"session_id": "late"}
	sc.hook(t, fixture(t, "user_prompt_submit", s), "")
	asked := time.Now()
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", s), ""), "ask", "Push to the remote?")
	waitFor(t, func() bool { return time.Since(asked) > 100*time.Millisecond })
	sc.hook(t, fixture(t, "post_tool_use_git_push", s), "")
	sc.hook(t, fixture(t, "stop", s), "")
	waitIdle(t, shadow)
	if sum := shadow.Summary(); sum.Disagreements != 0 {
		t.Errorf("the shadow of the same plugins disagrees with the run: %+v", sum)
	}
	sc.close()
	cand, err := host.Open(context.Background(), host.Options{ConfigPath: filepath.Join(dir, "awaken.toml"), Candidate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cand.Close()
	g := cand.Acquire()
	defer g.Release()
	rep, err := replay.Run(context.Background(), g.Runtime, []string{filepath.Join(dir, "journal")}, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs == 0 || len(rep.Flips) != 0 {
		t.Fatalf("replay of the same plugins: %d runs, flips %+v", rep.Runs, rep.Flips)
	}
}
