// Package filestore holds durable implementations of run.Store. Store
// keeps each thread and run in its own JSON file, and a run's later saves
// in a log of changes beside it (runlog.go), written so that a crash never
// loses or tears a save (server/README.md, "Stores and restarts"), and
// reports corrupt files instead of dropping them.
package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/run"
)

const (
	threadsDir = "threads"
	runsDir    = "runs"
	ext        = ".json"
	// tempPrefix starts every temp file, so Open can tell a write a crash
	// interrupted from a record; a leading dot also keeps it out of plain ls.
	tempPrefix    = ".tmp-"
	corruptSuffix = ".corrupt-"
	// prevSuffix makes, from a save's temp name, the second name of the
	// record it replaces while it may be taken back (see write).
	prevSuffix = "-prev"
)

var (
	_ run.Store     = (*Store)(nil)
	_ run.Prober    = (*Store)(nil)
	_ run.SetAsider = (*Store)(nil)
)

// Store is a run.Store that keeps threads and runs as JSON files under
// a directory: threads/<stem>.json and runs/<stem>.json, where the stem
// escapes the id (see stemOf). One file per record keeps a save O(record)
// and lets an operator read, copy or delete one thread with plain tools.
// A run also has a log of the changes saved since its base was written,
// runs/<stem>.log (run.RunLog, see runlog.go), so saving one tool call of
// a long step costs O(the change), not O(the run). sessions/<stem>.json
// keeps what a coding-agent session's `hook --local` event left for the
// next: its runs in progress and the adapter's facts (see sessions.go).
//
// Every save writes a temp file in the same directory, fsyncs it, renames it
// over the record and fsyncs the directory: after a crash the record is
// either the old or the new one, never a mix. A save that returns an error
// leaves the old record (see write).
//
// Operations on one record are serialized, in this process and with other
// processes that use the directory (see lock.go); different records
// proceed in parallel.
type Store struct {
	dir   string
	log   *slog.Logger
	fs    fileSystem
	locks keyedMutex

	mu       sync.Mutex
	problems []Problem
	logs     map[string]*logState // by base path: see AppendRun
	// held is, by base path, the length a read of the run's log stops
	// at: past it is a failed save that could not be cut off (takeBack).
	held map[string]int64
	// noLinks warns once that saves cannot be taken back (see write).
	noLinks sync.Once
	// unsynced are the directories where a rename that took back a failed
	// save may not be durable yet: a save there fsyncs the directory
	// before it reports success (see write and appendLine).
	unsynced map[string]bool
	// compactAt is the log size below which a log is never compacted
	// (compactMin; tests lower it).
	compactAt int64
}

// Problem is a corrupt file the store found and set aside. Operators see it
// (and the error log line) rather than a thread that silently lost its
// state; the bytes stay at SetAsidePath for repair.
type Problem struct {
	Path         string    `json:"path"`
	SetAsidePath string    `json:"set_aside_path"`
	Err          string    `json:"error"`
	At           time.Time `json:"at"`
}

// Open opens (creating if needed, mode 0o700) a file store in dir and
// removes temp files left by a crash. A nil log discards.
func Open(dir string, log *slog.Logger) (*Store, error) {
	return openFS(dir, log, osFS{})
}

// openFS is Open on a given file system (tests record or fail its steps).
func openFS(dir string, log *slog.Logger, fsys fileSystem) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{dir: dir, log: log, fs: fsys, compactAt: compactMin}
	for _, sub := range []string{threadsDir, runsDir, sessionsDir} {
		if err := fsys.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("open file store: %w", err)
		}
	}
	// Make the new directories themselves durable, so the first save cannot
	// vanish with a directory entry that was never synced. The parent may be
	// one this process cannot open (mode 0o711), hence only a warning there.
	if err := fsys.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("open file store: sync %s: %w", dir, err)
	}
	if parent := filepath.Dir(filepath.Clean(dir)); parent != dir {
		if err := fsys.SyncDir(parent); err != nil {
			log.Warn("could not sync the store's parent directory", "dir", parent, "err", err)
		}
	}
	// Another process's save in progress has temp files too: wait for it.
	unlock, err := lockAll(dir)
	if err != nil {
		return nil, fmt.Errorf("open file store: %w", err)
	}
	defer unlock()
	for _, sub := range []string{threadsDir, runsDir, sessionsDir} {
		if err := s.removeTemps(filepath.Join(dir, sub)); err != nil {
			return nil, fmt.Errorf("open file store: %w", err)
		}
	}
	if err := s.removeOrphanLogs(filepath.Join(dir, runsDir)); err != nil {
		return nil, fmt.Errorf("open file store: %w", err)
	}
	return s, nil
}

// removeOrphanLogs deletes the logs of runs whose base is gone: a crash
// stopped DeleteRun between the two. A log whose base was set aside as
// corrupt stays, for the operator who repairs it.
func (s *Store) removeOrphanLogs(dir string) error {
	entries, err := s.fs.ReadDir(dir)
	if err != nil {
		return err
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	removed := 0
	for _, e := range entries {
		stem, isLog := strings.CutSuffix(e.Name(), logExt)
		if !isLog || e.IsDir() || names[stem+ext] {
			continue
		}
		setAside := false
		for name := range names {
			if strings.HasPrefix(name, stem+ext+corruptSuffix) {
				setAside = true
				break
			}
		}
		if setAside {
			continue
		}
		if err := s.fs.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removed++
	}
	if removed > 0 {
		s.log.Info("removed the logs of deleted runs", "dir", dir, "count", removed)
		return s.fs.SyncDir(dir)
	}
	return nil
}

// removeTemps deletes the temp files of writes a crash interrupted. Their
// record was never renamed into place, so nothing saved is lost.
func (s *Store) removeTemps(dir string) error {
	entries, err := s.fs.ReadDir(dir)
	if err != nil {
		return err
	}
	removed := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) || e.IsDir() {
			continue
		}
		if err := s.fs.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removed++
	}
	if removed > 0 {
		s.log.Info("removed temp files of interrupted writes", "dir", dir, "count", removed)
		return s.fs.SyncDir(dir)
	}
	return nil
}

// Problems returns the corrupt files found so far, oldest first.
func (s *Store) Problems() []Problem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Problem(nil), s.problems...)
}

// Thread implements run.Store.
func (s *Store) Thread(ctx context.Context, id string) (run.Thread, bool, error) {
	if err := ctx.Err(); err != nil {
		return run.Thread{}, false, err
	}
	if !utf8.ValidString(id) {
		return run.Thread{}, false, nil // PutThread never saves one
	}
	path := s.path(threadsDir, id)
	defer s.locks.lock(path)()
	return load(ctx, s, path, id, threadID)
}

// PutThread implements run.Store: the compare-and-swap reads the saved
// revision under the record's lock, so of many saves on one base exactly one
// wins.
func (s *Store) PutThread(ctx context.Context, t run.Thread) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := checkID("thread", t.ID); err != nil {
		return 0, err
	}
	path := s.path(threadsDir, t.ID)
	unlock, err := s.lockRecord(path)
	if err != nil {
		return 0, fmt.Errorf("save thread %q: %w", t.ID, err)
	}
	defer unlock()
	cur, _, err := load(ctx, s, path, t.ID, threadID)
	if err != nil {
		return 0, fmt.Errorf("save thread %q: %w", t.ID, err)
	}
	if cur.Revision != t.Revision {
		return 0, errs.New(errs.RevisionConflict, "thread %q was saved by another run (revision %d, expected %d); run again", t.ID, cur.Revision, t.Revision)
	}
	t.Revision++
	if _, err := s.write(path, &t); err != nil {
		return 0, fmt.Errorf("save thread %q: %w", t.ID, err)
	}
	return t.Revision, nil
}

// Run implements run.Store: the run's base with its log applied (see
// AppendRun).
func (s *Store) Run(ctx context.Context, id string) (run.Checkpoint, bool, error) {
	if err := ctx.Err(); err != nil {
		return run.Checkpoint{}, false, err
	}
	if !utf8.ValidString(id) {
		return run.Checkpoint{}, false, nil // PutRun never saves one
	}
	path := s.path(runsDir, id)
	unlock, err := s.lockRecord(path)
	if err != nil {
		return run.Checkpoint{}, false, fmt.Errorf("read run %q: %w", id, err)
	}
	defer unlock()
	cp, st, clean, ok, err := s.readRun(ctx, id, path)
	if ok && clean && st.epoch != "" && s.state(path) == nil {
		s.remember(path, &st) // the next AppendRun need not read the files
	}
	return cp, ok, err
}

// PutRun implements run.Store: it writes the whole checkpoint as the run's
// base, replacing the base and its log.
func (s *Store) PutRun(ctx context.Context, cp run.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkID("run", cp.RunID); err != nil {
		return err
	}
	path := s.path(runsDir, cp.RunID)
	unlock, err := s.lockRecord(path)
	if err != nil {
		return fmt.Errorf("save run %q: %w", cp.RunID, err)
	}
	defer unlock()
	if _, err := s.putBase(ctx, path, s.logPath(cp.RunID), cp); err != nil {
		return fmt.Errorf("save run %q: %w", cp.RunID, err)
	}
	return nil
}

// DeleteRun implements run.Store. Deleting a missing run succeeds, so a
// retried delete is harmless. The base goes first: a crash before the log
// follows leaves a log without a base, which no read uses.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !utf8.ValidString(id) {
		return nil
	}
	path := s.path(runsDir, id)
	unlock, err := s.lockRecord(path)
	if err != nil {
		return fmt.Errorf("delete run %q: %w", id, err)
	}
	defer unlock()
	s.forget(path)
	if err := s.fs.Remove(path); err == nil {
		s.release(path) // a log without a base is never read
		// Synced like a save, so a crash cannot bring back a finished run.
		if err := s.fs.SyncDir(filepath.Dir(path)); err != nil {
			return fmt.Errorf("delete run %q: %w", id, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete run %q: %w", id, err)
	}
	if err := s.removeLog(s.logPath(id)); err != nil {
		return fmt.Errorf("delete run %q: %w", id, err)
	}
	return nil
}

func (s *Store) path(sub, id string) string {
	return filepath.Join(s.dir, sub, stemOf(id)+ext)
}

// checkID refuses ids that JSON cannot carry: encoding/json would replace
// their invalid bytes, and the saved record would then name another id.
func checkID(kind, id string) error {
	if !utf8.ValidString(id) {
		return errs.New(errs.BadRequest, "%s id %q is not valid UTF-8; use a UTF-8 id", kind, id)
	}
	return nil
}

func threadID(t *run.Thread) string { return t.ID }

// load reads the record at path. A missing file is (zero, false, nil). A
// corrupt one is set aside and reported, then treated as missing, so one bad
// file never blocks its thread forever; an I/O error is returned as is,
// because the record may well be fine.
func load[T any](ctx context.Context, s *Store, path, id string, idFn func(*T) string) (T, bool, error) {
	var v T
	data, err := s.fs.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return v, false, nil
	}
	if err != nil {
		return v, false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := decode(data, &v, id, idFn); err != nil {
		var zero T
		return zero, false, s.setAside(ctx, path, err)
	}
	return v, true, nil
}

// decode parses a record and checks that it is the one asked for: a file
// copied under another name is as wrong as a torn one. Unknown fields are
// allowed, so a record a newer version wrote still loads.
func decode[T any](data []byte, v *T, id string, idFn func(*T) string) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	if got := idFn(v); got != id {
		return fmt.Errorf("file holds id %q, not %q", got, id)
	}
	return nil
}

// setAside renames a corrupt file to "<name>.corrupt-<unix nanos>", which no
// lookup reads, and reports it. If the rename fails the error is returned:
// treating the record as missing would let the next save overwrite it.
func (s *Store) setAside(ctx context.Context, path string, cause error) error {
	at := time.Now()
	aside := ""
	for n := at.UnixNano(); ; n++ { // a coarse clock must not make two set-asides collide
		aside = path + corruptSuffix + strconv.FormatInt(n, 10)
		_, err := s.fs.Lstat(aside)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			// Not knowing whether the name is free must not spin: the
			// record stays corrupt and in place, and reading it fails.
			return fmt.Errorf("set aside corrupt %s (%v): look for a free name: %w", path, cause, err)
		}
	}
	if err := s.fs.Rename(path, aside); err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "corrupt store file could not be set aside",
			slog.String("path", path), slog.String("err", cause.Error()), slog.String("rename_err", err.Error()))
		return fmt.Errorf("set aside corrupt %s (%v): %w", path, cause, err)
	}
	if err := s.fs.SyncDir(filepath.Dir(path)); err != nil {
		// The file is set aside in this process either way; a crash may only
		// bring it back, to be found and set aside again.
		s.log.LogAttrs(ctx, slog.LevelWarn, "sync after setting aside", slog.String("path", path), slog.String("err", err.Error()))
	}
	s.log.LogAttrs(ctx, slog.LevelError, "corrupt store file set aside",
		slog.String("path", path), slog.String("set_aside", aside), slog.String("err", cause.Error()))
	s.mu.Lock()
	s.problems = append(s.problems, Problem{Path: path, SetAsidePath: aside, Err: cause.Error(), At: at})
	s.mu.Unlock()
	return nil
}

// SetAsideRun implements run.SetAsider: the latest file a run's corrupt
// base was set aside as (with its log, if it had one: see setAsideRun).
// It reads the directory, which only a lost run makes worth it.
func (s *Store) SetAsideRun(ctx context.Context, id string) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	if !utf8.ValidString(id) {
		return "", false, nil
	}
	path := s.path(runsDir, id)
	entries, err := s.fs.ReadDir(filepath.Dir(path))
	if err != nil {
		return "", false, err
	}
	prefix, latest, at := filepath.Base(path)+corruptSuffix, "", int64(-1)
	for _, e := range entries {
		n, isAside := strings.CutPrefix(e.Name(), prefix)
		if !isAside {
			continue
		}
		if t, err := strconv.ParseInt(n, 10, 64); err == nil && t > at {
			latest, at = e.Name(), t
		}
	}
	if latest == "" {
		return "", false, nil
	}
	return filepath.Join(filepath.Dir(path), latest), true, nil
}

// write saves v at path atomically and durably: temp file in the same
// directory (so the rename cannot cross file systems), fsync, close, rename
// over the target, fsync the directory (so the rename itself survives a
// crash).
//
// A save that returns an error must leave the old record in place: the
// sidecar restores a run whose save failed from the store and the client
// retries the call, which the new record would refuse. So before the
// rename the old record gets a second name (a temp name, which Open
// removes after a crash), and if the directory's fsync fails the old
// record is renamed back (a new record is removed). After a crash then
// either may be there, as after any save that did not return.
func (s *Store) write(path string, v any) (n int, err error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // readable "<" and "&" in messages; same bytes back
	if err := enc.Encode(v); err != nil {
		return 0, err
	}
	dir := filepath.Dir(path)
	f, err := s.fs.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		s.fs.Remove(tmp)
		return 0, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		s.fs.Remove(tmp)
		return 0, err
	}
	if err := f.Close(); err != nil {
		s.fs.Remove(tmp)
		return 0, err
	}
	prev, undoable := tmp+prevSuffix, true
	if err := s.fs.Link(path, prev); errors.Is(err, fs.ErrNotExist) {
		prev = "" // a new record: undone by removing it
	} else if err != nil {
		// A file system without hard links: saves work, but one whose
		// directory fsync fails cannot be taken back.
		prev, undoable = "", false
		s.noLinks.Do(func() {
			s.log.Warn("the store's file system refuses hard links; a save whose directory fsync fails is kept although it reports an error",
				"dir", dir, "err", err)
		})
	}
	if err := s.fs.Rename(tmp, path); err != nil {
		s.fs.Remove(tmp)
		if prev != "" {
			s.fs.Remove(prev)
		}
		return 0, err
	}
	if err := s.fs.SyncDir(dir); err != nil {
		if !undoable {
			return 0, fmt.Errorf("written but not synced: %w", err)
		}
		undo := func() error { return s.fs.Remove(path) }
		if prev != "" {
			undo = func() error { return s.fs.Rename(prev, path) }
		}
		if uerr := undo(); uerr != nil {
			return 0, fmt.Errorf("written but not synced, and the record before could not be put back (%v): %w", uerr, err)
		}
		// The undo is a rename too: until the directory is fsynced, a
		// crash may keep the failed save's record, so no later save there
		// is acknowledged before it is (dirSynced).
		s.markUnsynced(dir)
		return 0, fmt.Errorf("not saved, the directory's fsync failed: %w", err)
	}
	s.dirSynced(dir)
	if prev != "" {
		// Open removes it if this fails: it has a temp name.
		s.fs.Remove(prev)
	}
	return buf.Len(), nil
}

func (s *Store) markUnsynced(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unsynced == nil {
		s.unsynced = map[string]bool{}
	}
	s.unsynced[dir] = true
}

// dirSynced records that dir was fsynced.
func (s *Store) dirSynced(dir string) {
	s.mu.Lock()
	delete(s.unsynced, dir)
	s.mu.Unlock()
}

// needsSync reports whether a save in dir must fsync it first (see
// unsynced).
func (s *Store) needsSync(dir string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unsynced[dir]
}

// Probe implements run.Prober: it writes, fsyncs and removes a temp file in
// each directory the store writes to, so a sidecar can tell whether saves
// would succeed now (its /readyz) without touching a record.
func (s *Store) Probe(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, sub := range []string{threadsDir, runsDir} {
		if err := s.probe(filepath.Join(s.dir, sub)); err != nil {
			return fmt.Errorf("the file store cannot write in %s: %w", filepath.Join(s.dir, sub), err)
		}
	}
	return nil
}

func (s *Store) probe(dir string) error {
	f, err := s.fs.CreateTemp(dir, tempPrefix+"probe-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write([]byte("probe\n"))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := s.fs.Remove(tmp); err == nil {
		err = rerr
	}
	return err
}

// keyedMutex serializes work per key without keeping a mutex for every key
// ever seen: an entry lives while someone holds or waits for it.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*refMutex
}

type refMutex struct {
	sync.Mutex
	refs int
}

// lock locks key and returns its unlock.
func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*refMutex{}
	}
	r := k.m[key]
	if r == nil {
		r = &refMutex{}
		k.m[key] = r
	}
	r.refs++
	k.mu.Unlock()
	r.Lock()
	return func() {
		r.Unlock()
		k.mu.Lock()
		if r.refs--; r.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// Kind implements run.Kinded.
func (s *Store) Kind() string { return "file" }
