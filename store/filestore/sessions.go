package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"unicode/utf8"
)

// sessionsDir keeps, per coding-agent session that `awaken-lua hook
// --local` serves, what its last event left for the next: the runs in
// progress, and what the hook adapter learned of the session. Each event
// is a process of its own, so without this record the next event would
// not find the session's run: it would start another, the first would
// stay in runs/ for good, and thread state, which reaches the thread when
// a run ends, would never carry from event to event.
const sessionsDir = "sessions"

// sessionVersion is the format of the session records this version
// writes: 1 (written without a version) holds the runs alone; 2 adds the
// adapter's facts.
const sessionVersion = 2

// sessionRecord is a session's record.
type sessionRecord struct {
	Session string            `json:"session"`
	Version int               `json:"version,omitempty"`
	Runs    map[string]string `json:"runs"` // thread id -> the run in progress that holds it
	Facts   json.RawMessage   `json:"facts,omitempty"`
}

func sessionKey(r *sessionRecord) string { return r.Session }

// LocalSession is what a session's last `hook --local` event left for the
// next one.
type LocalSession struct {
	// Runs are the runs in progress, thread id -> run id. A run since
	// ended is harmless: it is not found, and the session starts a new one.
	Runs map[string]string
	// Facts are what the hook adapter learned of the session, as it
	// encodes them (the store keeps them as they are).
	Facts json.RawMessage
}

// Session returns what the session's last event left; nothing when it
// left nothing or never ran. The facts of a record a later version wrote
// are left out (its runs still hold their threads): what they mean may
// have changed, and an event without them decides as before they were kept.
func (s *Store) Session(ctx context.Context, session string) (LocalSession, error) {
	if err := ctx.Err(); err != nil {
		return LocalSession{}, err
	}
	if !utf8.ValidString(session) {
		return LocalSession{}, nil // PutSession never saves one
	}
	path := s.path(sessionsDir, session)
	defer s.locks.lock(path)()
	rec, _, err := load(ctx, s, path, session, sessionKey)
	if err != nil {
		return LocalSession{}, fmt.Errorf("read session %q: %w", session, err)
	}
	ls := LocalSession{Runs: rec.Runs}
	if rec.Version <= sessionVersion {
		ls.Facts = rec.Facts
	}
	return ls, nil
}

// PutSession records what the session's event left; with no run and no
// facts it removes the session's record.
func (s *Store) PutSession(ctx context.Context, session string, ls LocalSession) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkID("session", session); err != nil {
		return err
	}
	path := s.path(sessionsDir, session)
	unlock, err := s.lockRecord(path)
	if err != nil {
		return fmt.Errorf("save session %q: %w", session, err)
	}
	defer unlock()
	facts := ls.Facts
	if t := bytes.TrimSpace(facts); len(t) == 0 || bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("{}")) {
		facts = nil
	}
	if len(ls.Runs) == 0 && facts == nil {
		if err := s.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("save session %q: %w", session, err)
		}
		return nil
	}
	rec := &sessionRecord{Session: session, Version: sessionVersion, Runs: maps.Clone(ls.Runs), Facts: slices.Clone(facts)}
	if rec.Runs == nil {
		rec.Runs = map[string]string{}
	}
	if _, err := s.write(path, rec); err != nil {
		return fmt.Errorf("save session %q: %w", session, err)
	}
	return nil
}
