package filestore

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// TestSessionRuns: a session's record keeps the runs and facts its last
// event left, replaced by the next event's and removed when neither is
// left; a session never recorded, or one whose record is corrupt (set
// aside), has none.
func TestSessionRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	session := "a/b c\u00e9" // ids name files only through the store's encoding
	for _, want := range []LocalSession{
		{Runs: map[string]string{session: "run_1"}},
		{Runs: map[string]string{session: "run_2", session + "/subagent/x": "run_3"}, Facts: json.RawMessage(`{"a":{"posts":true}}`)},
		{Facts: json.RawMessage(`{"a":{"posts":true}}`)},
		{Facts: json.RawMessage(`{}`)},
	} {
		if err := s.PutSession(ctx, session, want); err != nil {
			t.Fatal(err)
		}
		got, err := s.Session(ctx, session)
		wantFacts := string(want.Facts)
		if wantFacts == "{}" {
			wantFacts = ""
		}
		if err != nil || !maps.Equal(got.Runs, want.Runs) || string(got.Facts) != wantFacts {
			t.Fatalf("after saving %v %s: got %v %s, %v", want.Runs, want.Facts, got.Runs, got.Facts, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, sessionsDir, "*")); len(left) != 0 {
		t.Fatalf("a session with no runs and no facts left keeps a record: %v", left)
	}
	if err := s.PutSession(ctx, "bad\xff", LocalSession{Runs: map[string]string{"t": "r"}}); err == nil {
		t.Fatal("a session id that is not UTF-8 was saved")
	}
	if err := s.PutSession(ctx, "s", LocalSession{Runs: map[string]string{"s": "run_1"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path(sessionsDir, "s"), []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Session(ctx, "s"); err != nil || len(got.Runs) != 0 || got.Facts != nil {
		t.Fatalf("corrupt record: got %v, %v; want none (set aside)", got, err)
	}
}

// A record an earlier version wrote (runs alone, no version) still loads;
// one a later version wrote gives its runs but not its facts, whose
// meaning this version may not know.
func TestSessionRecordVersions(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	for _, tc := range []struct {
		name, record string
		facts        string
	}{
		{"v1", `{"session":"s","runs":{"s":"run_1"}}`, ""},
		{"v2", `{"session":"s","version":2,"runs":{"s":"run_1"},"facts":{"s":{"posts":true}}}`, `{"s":{"posts":true}}`},
		{"later", `{"session":"s","version":3,"runs":{"s":"run_1"},"facts":{"s":{"posts":"maybe"}},"more":1}`, ""},
	} {
		if err := os.WriteFile(s.path(sessionsDir, "s"), []byte(tc.record+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := s.Session(ctx, "s")
		if err != nil || got.Runs["s"] != "run_1" || string(got.Facts) != tc.facts {
			t.Fatalf("%s: got %v %s, %v; want run_1 and facts %q", tc.name, got.Runs, got.Facts, err, tc.facts)
		}
	}
	if err := s.PutSession(ctx, "s", LocalSession{Facts: json.RawMessage(`{"s":{}}`)}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(s.path(sessionsDir, "s"))
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil || rec["version"] != float64(sessionVersion) {
		t.Fatalf("a saved record: %s (%v); want version %d", raw, err, sessionVersion)
	}
}
