package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/awaken-lua/awaken-lua/run"
)

// recFS is the real file system with every step of a Store recorded, paths
// relative to the store, and one kind of step made to fail on demand.
type recFS struct {
	root string
	mu   sync.Mutex
	ops  []string
	temp map[string]string // temp file path -> "<tmpN>"
	// fail makes the next step of each of these kinds fail (then that
	// kind is cleared).
	fail map[string]bool
	// written holds what was written to each temp file.
	written map[string][]byte
	// crashIn, when set, counts the steps left before a crash: the step
	// that reaches 0 fails (a write writes half its bytes first) and so
	// does every later one, as if the process had died there.
	crashIn int
	crashed bool
}

var (
	errInjected = errors.New("injected failure")
	errCrashing = errors.New("crashed at this step")
	errCrashed  = errors.New("crashed before this step")
)

func newRecFS(root string) *recFS {
	return &recFS{root: root, temp: map[string]string{}, written: map[string][]byte{}}
}

// step records op on the paths and reports whether it must fail.
func (r *recFS) step(op string, paths ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := op
	for _, p := range paths {
		line += " " + r.rel(p)
	}
	r.ops = append(r.ops, line)
	if r.crashed {
		return errCrashed
	}
	if r.crashIn > 0 {
		if r.crashIn--; r.crashIn == 0 {
			r.crashed = true
			return fmt.Errorf("%s: %w", op, errCrashing)
		}
	}
	if r.fail[op] {
		delete(r.fail, op)
		return fmt.Errorf("%s: %w", op, errInjected)
	}
	return nil
}

// rel names a path relative to the store; temp files by their order of
// creation, with their directory, so a test sees where they were made.
func (r *recFS) rel(p string) string {
	if t, ok := r.temp[p]; ok {
		return t
	}
	if t, ok := r.temp[strings.TrimSuffix(p, prevSuffix)]; ok {
		return t + prevSuffix
	}
	if rel, err := filepath.Rel(r.root, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return "OUTSIDE:" + p
}

func (r *recFS) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := r.ops
	r.ops = nil
	return ops
}

// arm makes the next step of each kind in ops fail once, replacing what
// was armed before; arm("") disarms.
func (r *recFS) arm(ops ...string) {
	r.mu.Lock()
	r.fail = map[string]bool{}
	for _, op := range ops {
		r.fail[op] = true
	}
	r.mu.Unlock()
}

func (r *recFS) MkdirAll(path string, perm fs.FileMode) error {
	if err := r.step("mkdir", path); err != nil {
		return err
	}
	return osFS{}.MkdirAll(path, perm)
}

func (r *recFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	if err := r.step("readdir", dir); err != nil {
		return nil, err
	}
	return osFS{}.ReadDir(dir)
}

func (r *recFS) ReadFile(path string) ([]byte, error) {
	if err := r.step("read", path); err != nil {
		return nil, err
	}
	return osFS{}.ReadFile(path)
}

func (r *recFS) Lstat(path string) (fs.FileInfo, error) { return osFS{}.Lstat(path) }

func (r *recFS) CreateTemp(dir, pattern string) (tempFile, error) {
	if err := r.step("create-temp", dir); err != nil {
		return nil, err
	}
	f, err := osFS{}.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	rel, _ := filepath.Rel(r.root, filepath.Dir(f.Name()))
	r.temp[f.Name()] = fmt.Sprintf("%s/<tmp%d>", filepath.ToSlash(rel), len(r.temp)+1)
	r.mu.Unlock()
	return &recFile{r: r, f: f}, nil
}

func (r *recFS) OpenAppend(path string) (tempFile, error) {
	if err := r.step("open-append", path); err != nil {
		return nil, err
	}
	f, err := osFS{}.OpenAppend(path)
	if err != nil {
		return nil, err
	}
	return &recFile{r: r, f: f}, nil
}

func (r *recFS) Rename(from, to string) error {
	if err := r.step("rename", from, to); err != nil {
		return err
	}
	return osFS{}.Rename(from, to)
}

func (r *recFS) Remove(path string) error {
	if err := r.step("remove", path); err != nil {
		return err
	}
	return osFS{}.Remove(path)
}

func (r *recFS) Link(from, to string) error {
	if err := r.step("link", from, to); err != nil {
		return err
	}
	return osFS{}.Link(from, to)
}

func (r *recFS) Truncate(path string, size int64) error {
	if err := r.step("truncate", path); err != nil {
		return err
	}
	return osFS{}.Truncate(path, size)
}

func (r *recFS) SyncDir(dir string) error {
	if err := r.step("sync-dir", dir); err != nil {
		return err
	}
	return osFS{}.SyncDir(dir)
}

type recFile struct {
	r *recFS
	f tempFile
}

func (f *recFile) Name() string { return f.f.Name() }

func (f *recFile) Write(b []byte) (int, error) {
	if err := f.r.step("write", f.f.Name()); err != nil {
		if errors.Is(err, errCrashing) { // torn: part of the bytes reach the file
			n, _ := f.f.Write(b[:len(b)/2])
			return n, err
		}
		return 0, err
	}
	f.r.mu.Lock()
	f.r.written[f.f.Name()] = append(f.r.written[f.f.Name()], b...)
	f.r.mu.Unlock()
	return f.f.Write(b)
}

func (f *recFile) Sync() error {
	if err := f.r.step("sync", f.f.Name()); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *recFile) Close() error {
	err := f.f.Close()
	if serr := f.r.step("close", f.f.Name()); serr != nil {
		return serr
	}
	return err
}

func openRec(t *testing.T) (*Store, *recFS, string) {
	t.Helper()
	dir := t.TempDir()
	rec := newRecFS(dir)
	s, err := openFS(dir, nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	rec.take()
	return s, rec, dir
}

// Every save is: a temp file in the record's own directory, the whole
// record written to it, fsync, close, a second name for the record it
// replaces (so a failed directory fsync can put it back; for a new record
// the link finds none), rename over the record, fsync of the directory;
// in that order. Writing in place, skipping either fsync, renaming before
// the fsync or making the temp file in another directory changes the
// sequence.
func TestSaveSteps(t *testing.T) {
	ctx := context.Background()
	s, rec, dir := openRec(t)

	if _, err := s.PutThread(ctx, sampleThread("t")); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"read threads/t.json", // the compare-and-swap reads the saved revision
		"create-temp threads",
		"write threads/<tmp1>",
		"sync threads/<tmp1>",
		"close threads/<tmp1>",
		"link threads/t.json threads/<tmp1>-prev",
		"rename threads/<tmp1> threads/t.json",
		"sync-dir threads",
	}
	if got := rec.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("PutThread steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The temp file got the whole record: what was written is what is read.
	onDisk, err := os.ReadFile(filepath.Join(dir, "threads", "t.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range rec.written {
		if string(b) != string(onDisk) {
			t.Fatalf("the temp file got %d bytes, the record has %d", len(b), len(onDisk))
		}
	}

	if err := s.PutRun(ctx, sampleCheckpoint("r", "t")); err != nil {
		t.Fatal(err)
	}
	want = []string{
		"create-temp runs",
		"write runs/<tmp2>",
		"sync runs/<tmp2>",
		"close runs/<tmp2>",
		"link runs/r.json runs/<tmp2>-prev",
		"rename runs/<tmp2> runs/r.json",
		"sync-dir runs",
	}
	if got := rec.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("PutRun steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	if err := s.DeleteRun(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	want = []string{"remove runs/r.json", "sync-dir runs"}
	if got := rec.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("DeleteRun steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A save that fails at any step, the directory's fsync after the rename
// included, leaves the old record as it was (or no record, for a new one)
// and no temp file behind: a save that returned an error is not read back,
// so the sidecar's retry of the call runs it again. This holds for threads
// and for runs (PutRun, and the base a compaction writes).
func TestSaveFailsAtEachStep(t *testing.T) {
	ctx := context.Background()
	type record struct {
		name string
		// put saves the record, new or over the one saved before.
		put  func(s *Store, new bool) error
		read func(s *Store) (string, bool)
	}
	records := []record{
		{"thread", func(s *Store, new bool) error {
			th := run.Thread{ID: "t", Values: map[string]any{"v": "old"}}
			if new {
				th.Values["v"] = "new"
				if cur, ok, err := s.Thread(ctx, "t"); err != nil {
					return err
				} else if ok {
					th.Revision = cur.Revision
				}
			}
			_, err := s.PutThread(ctx, th)
			return err
		}, func(s *Store) (string, bool) {
			th, ok, err := s.Thread(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(th.Values["v"], "@", th.Revision), ok
		}},
		{"run", func(s *Store, new bool) error {
			cp := sampleCheckpoint("r", "t")
			cp.Step, cp.Seq = 2, 9
			if new {
				return s.PutRun(ctx, cp)
			}
			// A base and a log: PutRun replaces both.
			cp.Step, cp.Seq = 1, 1
			if err := s.PutRun(ctx, cp); err != nil {
				return err
			}
			d, _ := change(t, cp, 10)
			return s.AppendRun(ctx, d)
		}, func(s *Store) (string, bool) {
			cp, ok := readRun(t, s, "r")
			return fmt.Sprint(cp.Step, "@", cp.Seq), ok
		}},
	}
	for _, r := range records {
		for _, over := range []bool{true, false} {
			for _, step := range []string{"create-temp", "write", "sync", "close", "rename", "sync-dir"} {
				t.Run(fmt.Sprintf("%s/over %v/%s", r.name, over, step), func(t *testing.T) {
					s, rec, dir := openRec(t)
					if over {
						if err := r.put(s, false); err != nil {
							t.Fatal(err)
						}
					}
					old, had := r.read(s)
					rec.arm(step)
					if err := r.put(s, true); !errors.Is(err, errInjected) {
						t.Fatalf("a save with %s failing: %v", step, err)
					}
					rec.arm("")
					for _, st := range []*Store{s, open(t, dir)} {
						if got, ok := r.read(st); ok != had || got != old {
							t.Fatalf("a save that failed at %s changed the record: %v %s, before %v %s", step, ok, got, had, old)
						}
					}
					for _, sub := range []string{threadsDir, runsDir} {
						entries, err := os.ReadDir(filepath.Join(dir, sub))
						if err != nil {
							t.Fatal(err)
						}
						for _, e := range entries {
							if strings.HasPrefix(e.Name(), tempPrefix) {
								t.Fatalf("a save that failed at %s left %s behind", step, e.Name())
							}
						}
					}
					if err := r.put(s, true); err != nil {
						t.Fatalf("the retried save: %v", err)
					}
				})
			}
		}
	}
}

// On a file system that refuses hard links a save still works; only a
// failed directory fsync then cannot be taken back, and its error says
// the record was written.
func TestSaveWithoutHardLinks(t *testing.T) {
	ctx := context.Background()
	s, rec, _ := openRec(t)
	rev, err := s.PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{"v": "old"}})
	if err != nil {
		t.Fatal(err)
	}
	rec.arm("link")
	if rev, err = s.PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{"v": "new"}, Revision: rev}); err != nil {
		t.Fatalf("a save without a hard link: %v", err)
	}
	rec.arm("link", "sync-dir")
	_, err = s.PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{"v": "newer"}, Revision: rev})
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "written but not synced") {
		t.Fatalf("a failed directory fsync without a hard link: %v", err)
	}
	if th, _, _ := s.Thread(ctx, "t"); th.Values["v"] != "newer" {
		t.Fatalf("read %v", th.Values["v"])
	}
}

// Probe writes, fsyncs and removes a temp file in each directory the store
// writes to, and reports the first step that fails.
func TestProbe(t *testing.T) {
	ctx := context.Background()
	s, rec, dir := openRec(t)
	if err := s.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"create-temp threads", "write threads/<tmp1>", "sync threads/<tmp1>", "close threads/<tmp1>", "remove threads/<tmp1>",
		"create-temp runs", "write runs/<tmp2>", "sync runs/<tmp2>", "close runs/<tmp2>", "remove runs/<tmp2>",
	}
	if got := rec.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Probe steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, step := range []string{"create-temp", "write", "sync", "close", "remove"} {
		rec.arm(step)
		if err := s.Probe(ctx); !errors.Is(err, errInjected) {
			t.Fatalf("Probe with %s failing: %v", step, err)
		}
		rec.arm("")
	}
	// A directory that cannot hold files (here: replaced by a file, which
	// fails for root too) fails the probe; put back, it passes again.
	runs := filepath.Join(dir, "runs")
	if err := os.Rename(runs, runs+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(runs, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Probe(ctx); err == nil {
		t.Fatal("Probe passed with runs/ replaced by a file")
	}
	if err := os.Remove(runs); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(runs+".away", runs); err != nil {
		t.Fatal(err)
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatalf("Probe after the directory came back: %v", err)
	}
}
