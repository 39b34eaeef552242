package filestore

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// TestSessionRuns: a session's record keeps the runs its last event left,
// replaced by the next event's and removed when none is left; a session
// never recorded, or one whose record is corrupt (set aside), has none.
func TestSessionRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	session := "a/b c\u00e9" // ids name files only through the store's encoding
	for _, want := range []map[string]string{
		{session: "run_1"},
		{session: "run_2", session + "/subagent/x": "run_3"},
		nil,
	} {
		if err := s.PutSessionRuns(ctx, session, want); err != nil {
			t.Fatal(err)
		}
		got, err := s.SessionRuns(ctx, session)
		if err != nil || !maps.Equal(got, want) {
			t.Fatalf("after saving %v: got %v, %v", want, got, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, sessionsDir, "*")); len(left) != 0 {
		t.Fatalf("a session with no runs left keeps a record: %v", left)
	}
	if err := s.PutSessionRuns(ctx, "bad\xff", map[string]string{"t": "r"}); err == nil {
		t.Fatal("a session id that is not UTF-8 was saved")
	}
	if err := s.PutSessionRuns(ctx, "s", map[string]string{"s": "run_1"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path(sessionsDir, "s"), []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := s.SessionRuns(ctx, "s"); err != nil || len(got) != 0 {
		t.Fatalf("corrupt record: got %v, %v; want none (set aside)", got, err)
	}
}
