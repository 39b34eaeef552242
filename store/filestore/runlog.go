package filestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/run"
)

// A run is kept as a base, runs/<stem>.json (the checkpoint of one save,
// written like every record: temp file, fsync, rename, fsync of the
// directory), and a log, runs/<stem>.log, of the changes saved since (one
// run.Delta per line, appended and fsynced). A save of a step's tool call
// appends one line of the size of the change, whatever the run's size; a
// read applies the log to the base.
//
// When the log outgrows its base (and compactMin), the store compacts:
// writes the base as it now is, atomically, then removes the log. The log
// is at most as large as the base before it is rewritten, so a rewrite
// costs at most a few times the bytes appended since the last one: a save
// costs O(its change), amortized.
//
// Each base has an epoch, a random name written in it; each log line
// carries the epoch of the base it follows. A crash between writing a new
// base and removing the old log leaves lines of another epoch: they are in
// the new base already, and are skipped. A line is "<crc32c> <json>": the
// last line cut short (or garbled) by a crash while it was appended was
// never acknowledged and is dropped; a bad line before a good one is
// corruption, reported and set aside with its base (see setAside). An
// append that fails after writing is cut off again (see takeBack): a save
// that returned an error is never read back.
const (
	logExt = ".log"
	// compactMin is the log size below which a run's log is never
	// compacted: rewriting a small base after each few saves would cost
	// more fsyncs than it saves reading.
	compactMin = 64 << 10
)

var (
	_ run.RunLog = (*Store)(nil)

	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// runFile is a run's base as saved: its checkpoint and its epoch.
type runFile struct {
	run.Checkpoint
	// Epoch names this base; its log's lines carry it. Empty in a base
	// written before runs had logs: no line follows such a base.
	Epoch string `json:"log_epoch,omitempty"`
}

func runFileID(f *runFile) string { return f.RunID }

// logLine is one line of a run's log.
type logLine struct {
	Epoch string    `json:"epoch"`
	Delta run.Delta `json:"delta"`
}

// logState is what the store knows of a run's files while it appends to
// them, so a save neither reads them nor guesses: the epoch to write, the
// revision the next delta must build on, and the sizes that decide a
// compaction. It is kept only while it is known to match the disk; after
// a failed write it is forgotten and the next save reads the files again.
type logState struct {
	epoch    string
	seq      uint64
	baseSize int64
	logSize  int64
	// base is the base file as this process last wrote or read it: another
	// process on the store that rewrote it since made this state stale.
	base fs.FileInfo
}

// current reports whether a run's files are still as st knows them, so an
// append may trust it: another process on the store may have appended to
// the log or rewritten the base since (see lock.go).
func (s *Store) current(path, logPath string, st *logState) bool {
	if st.base == nil {
		return false
	}
	fi, err := s.fs.Lstat(path)
	if err != nil || !os.SameFile(fi, st.base) || fi.Size() != st.base.Size() || !fi.ModTime().Equal(st.base.ModTime()) {
		return false
	}
	if st.logSize < 0 {
		return true // AppendRun measures the log itself
	}
	n, err := s.logLen(logPath)
	return err == nil && n == st.logSize
}

func (s *Store) logPath(id string) string {
	return filepath.Join(s.dir, runsDir, stemOf(id)+logExt)
}

func (s *Store) state(path string) *logState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs[path]
}

func (s *Store) remember(path string, st *logState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logs == nil {
		s.logs = map[string]*logState{}
	}
	s.logs[path] = st
}

func (s *Store) forget(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.logs, path)
}

// AppendRun implements run.RunLog: one line appended to the run's log and
// fsynced (and the directory fsynced when the line starts the log), then a
// compaction when the log has outgrown the base.
func (s *Store) AppendRun(ctx context.Context, d run.Delta) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkID("run", d.RunID); err != nil {
		return err
	}
	path := s.path(runsDir, d.RunID)
	unlock, err := s.lockRecord(path)
	if err != nil {
		return fmt.Errorf("save run %q: %w", d.RunID, err)
	}
	defer unlock()
	logPath := s.logPath(d.RunID)
	st := s.state(path)
	if st != nil && !s.current(path, logPath, st) {
		s.forget(path) // another process saved the run since
		st = nil
	}
	if st == nil {
		var err error
		if st, err = s.openLog(ctx, d.RunID, path); err != nil {
			return fmt.Errorf("save run %q: %w", d.RunID, err)
		}
		if st == nil {
			return errs.New(errs.RevisionConflict, "run %q is not in the store: it ended, was deleted or set aside; "+
				"save it whole (PutRun)", d.RunID)
		}
	}
	if d.Base != st.seq {
		return errs.New(errs.RevisionConflict, "run %q is at save %d in the store, not %d: another process saved it; "+
			"restore it and run again", d.RunID, st.seq, d.Base)
	}
	line, err := encodeLine(st.epoch, d)
	if err != nil {
		return fmt.Errorf("save run %q: %w", d.RunID, err)
	}
	size := st.logSize
	if size < 0 { // putBase could not remove the old log: its length is not known
		if size, err = s.logLen(logPath); err != nil {
			s.forget(path)
			return fmt.Errorf("save run %q: %w", d.RunID, err)
		}
	}
	if opened, err := s.appendLine(logPath, line, size == 0); err != nil {
		// A save that returns an error must change nothing: the sidecar
		// restores the run from the store and the client retries the
		// call, which the line would make a call out of order. The next
		// save reads the files again.
		s.forget(path)
		if opened {
			s.takeBack(ctx, d.RunID, path, logPath, size, err)
		}
		return fmt.Errorf("save run %q: %w", d.RunID, err)
	}
	st.seq = d.Base + 1
	st.logSize += int64(len(line))
	if st.logSize > max(st.baseSize, s.compactAt) {
		// The change is saved; a failed compaction only leaves the log
		// long, and the next save tries again.
		if _, err := s.compact(ctx, d.RunID, path); err != nil {
			s.forget(path)
			s.log.LogAttrs(ctx, slog.LevelWarn, "cannot compact a run's log; the next save tries again",
				slog.String("run_id", d.RunID), slog.String("err", err.Error()))
		}
	}
	return nil
}

// logLen is the length of a run's log, 0 when there is none.
func (s *Store) logLen(logPath string) (int64, error) {
	fi, err := s.fs.Lstat(logPath)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// takeBack removes from a run's log what an append that failed may have
// left (all of its line, or part of it), so no read applies a save that
// returned an error. The log is cut back to size and fsynced, which a
// crash cannot undo. If the disk refuses the cut, reads in this process
// stop at size (see held) and the run is rewritten from them as a new
// base, whose epoch the line does not carry; if that fails too, the line
// stays held off until a save of the run rewrites it (openLog does, since
// a log with held bytes is not clean). Only a restart before that save
// could read the line, which a disk that fails every write allows nothing
// better against.
func (s *Store) takeBack(ctx context.Context, id, path, logPath string, size int64, cause error) {
	err := s.fs.Truncate(logPath, size)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return
	}
	s.hold(path, size)
	_, cerr := s.compact(ctx, id, path)
	if cerr == nil {
		return
	}
	err = errors.Join(err, cerr)
	s.log.LogAttrs(ctx, slog.LevelError, "cannot take a failed save back from a run's log; "+
		"this process reads the run without it, and the run's next save rewrites it",
		slog.String("run_id", id), slog.String("path", logPath), slog.String("save_err", cause.Error()),
		slog.String("err", err.Error()))
}

// hold makes reads of a run's log stop at size bytes: what follows is a
// failed save that could not be cut off (see takeBack).
func (s *Store) hold(path string, size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[string]int64{}
	}
	s.held[path] = size
}

// heldAt is the length reads of a run's log stop at, if one is held.
func (s *Store) heldAt(path string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.held[path]
	return n, ok
}

// release ends a hold: the run's base was replaced or removed, and the
// log's lines no longer follow it.
func (s *Store) release(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, path)
}

// openLog reads a run's files for appending: when the log is not clean
// (the last line torn, lines of an older base) or the base has no epoch,
// it compacts them first, so the next line follows good ones. nil: the run
// is not saved.
func (s *Store) openLog(ctx context.Context, id, path string) (*logState, error) {
	cp, st, clean, ok, err := s.readRun(ctx, id, path)
	if err != nil || !ok {
		return nil, err
	}
	if clean && st.epoch != "" {
		s.remember(path, &st)
		return &st, nil
	}
	return s.putBase(ctx, path, s.logPath(id), cp)
}

// compact writes the run as base and log make it as a new base, and
// removes the log. A crash at any point leaves the old base and log (the
// rename did not happen) or the new base (whose epoch the log's lines do
// not carry).
func (s *Store) compact(ctx context.Context, id, path string) (*logState, error) {
	cp, _, _, ok, err := s.readRun(ctx, id, path)
	if err != nil || !ok {
		return nil, err
	}
	return s.putBase(ctx, path, s.logPath(id), cp)
}

// putBase writes cp as the run's base with a new epoch, then removes the
// log, whose lines the new base holds (or, from PutRun, replaces).
func (s *Store) putBase(ctx context.Context, path, logPath string, cp run.Checkpoint) (*logState, error) {
	s.forget(path)
	epoch := rand.Text()
	n, err := s.write(path, &runFile{Checkpoint: cp, Epoch: epoch})
	if err != nil {
		return nil, err
	}
	s.release(path)             // the log's lines are of another epoch now
	base, _ := s.fs.Lstat(path) // nil: the next append reads the files again
	if err := s.removeLog(logPath); err != nil {
		// The base is saved; the log's lines are of another epoch, skipped
		// when read, and removed by the next save that reads them.
		s.log.LogAttrs(ctx, slog.LevelWarn, "cannot remove a run's replaced log", slog.String("path", logPath),
			slog.String("err", err.Error()))
		return &logState{epoch: epoch, seq: cp.Seq, baseSize: int64(n), logSize: -1, base: base}, nil // not remembered
	}
	st := &logState{epoch: epoch, seq: cp.Seq, baseSize: int64(n), base: base}
	s.remember(path, st)
	return st, nil
}

// removeLog removes a run's log, if there is one, durably.
func (s *Store) removeLog(logPath string) error {
	if _, err := s.fs.Lstat(logPath); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := s.fs.Remove(logPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return s.fs.SyncDir(filepath.Dir(logPath))
}

// appendLine appends line to the log and fsyncs it; a line that starts
// the log also fsyncs the directory, so the file itself survives a crash.
// opened is false when it failed before it could write anything.
func (s *Store) appendLine(logPath string, line []byte, starts bool) (opened bool, err error) {
	f, err := s.fs.OpenAppend(logPath)
	if err != nil {
		return false, err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return true, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return true, err
	}
	if err := f.Close(); err != nil {
		return true, err
	}
	if dir := filepath.Dir(logPath); starts || s.needsSync(dir) {
		if err := s.fs.SyncDir(dir); err != nil {
			return true, err
		}
		s.dirSynced(dir)
	}
	return true, nil
}

// readRun reads a run's base and applies its log. ok is false for a run
// that is not saved, or whose files were corrupt and are now set aside
// (reported, as load does). clean is false when the log has lines a save
// must not append after: a torn last line, or lines of an older base.
func (s *Store) readRun(ctx context.Context, id, path string) (cp run.Checkpoint, st logState, clean, ok bool, err error) {
	logPath := s.logPath(id)
	data, err := s.fs.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cp, st, false, false, nil
	}
	if err != nil {
		return cp, st, false, false, fmt.Errorf("read %s: %w", path, err)
	}
	var f runFile
	if derr := decode(data, &f, id, runFileID); derr != nil {
		return cp, st, false, false, s.setAsideRun(ctx, path, logPath, derr)
	}
	cp, st = f.Checkpoint, logState{epoch: f.Epoch, seq: f.Seq, baseSize: int64(len(data))}
	st.base, _ = s.fs.Lstat(path) // under the record's lock: the file just read
	log, err := s.fs.ReadFile(logPath)
	if errors.Is(err, fs.ErrNotExist) {
		return cp, st, true, true, nil
	}
	if err != nil {
		return run.Checkpoint{}, st, false, false, fmt.Errorf("read %s: %w", logPath, err)
	}
	st.logSize = int64(len(log))
	cut := false
	if n, ok := s.heldAt(path); ok && n < int64(len(log)) {
		log, cut = log[:n], true
	}
	clean, perr := replay(&cp, f.Epoch, log)
	if perr != nil {
		return run.Checkpoint{}, st, false, false, s.setAsideRun(ctx, logPath, path, fmt.Errorf("corrupt log: %w", perr))
	}
	st.seq = cp.Seq
	return cp, st, clean && !cut, true, nil
}

// replay applies to cp, a run's base, the lines of its log that follow it
// (those of its epoch). clean is false when the log has lines a save must
// not append after: a torn last line, or lines of an older base. An error
// is a corrupt log; cp is then partly changed.
func replay(cp *run.Checkpoint, epoch string, log []byte) (clean bool, err error) {
	lines, torn, err := parseLog(log)
	if err != nil {
		return false, err
	}
	clean = !torn
	for i, l := range lines {
		if l.Epoch != epoch || epoch == "" {
			clean = false // written before this base: already in it
			continue
		}
		if l.Delta.RunID != cp.RunID {
			return false, fmt.Errorf("line %d: a change of run %q", i+1, l.Delta.RunID)
		}
		if err := cp.Apply(l.Delta); err != nil {
			return false, fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	return clean, nil
}

// setAsideRun sets a run's corrupt file aside with the other file of the
// run (its base or its log), which means nothing without it. The base goes
// first: a crash in between leaves a log without a base, which no read
// uses and Open keeps (see removeTemps).
func (s *Store) setAsideRun(ctx context.Context, bad, other string, cause error) error {
	base, logPath := bad, other
	if filepath.Ext(bad) == logExt {
		base, logPath = other, bad
	}
	s.forget(base)
	for _, p := range []string{base, logPath} {
		if p != bad {
			if _, err := s.fs.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
		why := cause
		if p != bad {
			why = fmt.Errorf("set aside with %s: %w", filepath.Base(bad), cause)
		}
		if err := s.setAside(ctx, p, why); err != nil {
			return err
		}
	}
	return nil
}

// encodeLine makes d a log line: "<crc32c of the JSON, 8 hex digits>
// <JSON>\n". JSON escapes every newline in a string, so a line holds one
// record.
func encodeLine(epoch string, d run.Delta) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("00000000 ")
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(logLine{Epoch: epoch, Delta: d}); err != nil {
		return nil, err
	}
	b := buf.Bytes() // Encode ended it with '\n'
	sum := crc32.Checksum(b[9:len(b)-1], castagnoli)
	hex.Encode(b[:8], []byte{byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)})
	return b, nil
}

// parseLine reads one line (without its newline).
func parseLine(line []byte) (logLine, error) {
	var l logLine
	if len(line) < 10 || line[8] != ' ' {
		return l, errors.New("not a log line")
	}
	var sum [4]byte
	if _, err := hex.Decode(sum[:], line[:8]); err != nil {
		return l, errors.New("not a log line")
	}
	body := line[9:]
	want := uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
	if got := crc32.Checksum(body, castagnoli); got != want {
		return l, fmt.Errorf("checksum %08x, want %08x", got, want)
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return l, err
	}
	return l, nil
}

// parseLog splits a log into its lines. A bad last line (cut short or
// garbled by a crash while it was appended, so never acknowledged), and NUL
// bytes after it, are dropped and reported as torn; a bad line before a
// good one is an error: the log is corrupt.
func parseLog(data []byte) (lines []logLine, torn bool, err error) {
	for n := 1; len(data) > 0; n++ {
		line, rest, full := bytes.Cut(data, []byte{'\n'})
		l, lerr := parseLine(line)
		if lerr == nil && !full {
			lerr = errors.New("no newline")
		}
		if lerr != nil {
			if len(bytes.Trim(rest, "\x00")) == 0 {
				return lines, true, nil
			}
			return lines, false, fmt.Errorf("line %d: %w", n, lerr)
		}
		lines = append(lines, l)
		data = rest
	}
	return lines, false, nil
}
