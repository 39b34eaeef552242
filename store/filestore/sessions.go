package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"unicode/utf8"
)

// sessionsDir keeps, per coding-agent session that `awaken-lua hook
// --local` serves, the runs in progress its last event left. Each event
// is a process of its own, so without this record the next event would
// not find the session's run: it would start another, the first would
// stay in runs/ for good, and thread state, which reaches the thread when
// a run ends, would never carry from event to event.
const sessionsDir = "sessions"

// sessionRecord is a session's record: thread id -> the run in progress
// that holds it.
type sessionRecord struct {
	Session string            `json:"session"`
	Runs    map[string]string `json:"runs"`
}

func sessionKey(r *sessionRecord) string { return r.Session }

// SessionRuns returns the runs in progress that the session's last event
// left (thread id -> run id); none when it left none or never ran. A
// record that names runs since ended is harmless: a run that is gone is
// not found, and the session starts a new one.
func (s *Store) SessionRuns(ctx context.Context, session string) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !utf8.ValidString(session) {
		return nil, nil // PutSessionRuns never saves one
	}
	path := s.path(sessionsDir, session)
	defer s.locks.lock(path)()
	rec, _, err := load(ctx, s, path, session, sessionKey)
	if err != nil {
		return nil, fmt.Errorf("read session %q: %w", session, err)
	}
	return rec.Runs, nil
}

// PutSessionRuns records the runs in progress the session's event left;
// with none it removes the session's record.
func (s *Store) PutSessionRuns(ctx context.Context, session string, runs map[string]string) error {
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
	if len(runs) == 0 {
		if err := s.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("save session %q: %w", session, err)
		}
		return nil
	}
	if _, err := s.write(path, &sessionRecord{Session: session, Runs: maps.Clone(runs)}); err != nil {
		return fmt.Errorf("save session %q: %w", session, err)
	}
	return nil
}
