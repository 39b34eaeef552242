package filestore

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
)

// Several processes may share one store directory: a sidecar and
// `awaken-lua run --thread`, or the `hook --local` processes of a coding
// agent's parallel tool calls. A save reads the record, compares its
// revision and writes, so each record's read-modify-write holds a lock on
// its own byte of the store's lock file, lockFile (an OFD lock on Linux,
// flock(2) on the BSDs and macOS), beside the in-process keyedMutex; and
// Open removes what crashes left only while it holds the whole file, so
// it never takes the temp file of another process's save in progress.
const (
	lockFile = ".lock"
	// slots bounds the byte a record locks: two records share one only
	// by a 40-bit hash collision, which costs waiting, never correctness.
	slots = 1 << 40
)

// lockRecord serializes the read-modify-write of the record at path with
// this process's other goroutines and with other processes; the returned
// func unlocks it.
func (s *Store) lockRecord(path string) (func(), error) {
	unlock := s.locks.lock(path)
	h := fnv.New64a()
	h.Write([]byte(path))
	f, err := lockRange(filepath.Join(s.dir, lockFile), int64(h.Sum64()%slots), 1)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("lock the store against other processes: %w", err)
	}
	return func() { closeLock(f); unlock() }, nil
}

// lockAll waits until no other process is inside a save, and keeps them
// out until the returned func is called.
func lockAll(dir string) (func(), error) {
	f, err := lockRange(filepath.Join(dir, lockFile), 0, 0)
	if err != nil {
		return nil, fmt.Errorf("lock the store against other processes: %w", err)
	}
	return func() { closeLock(f) }, nil
}

func closeLock(f *os.File) {
	if f != nil {
		f.Close()
	}
}
