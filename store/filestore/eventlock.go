package filestore

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// A save locks only its own record, so two processes that each read a
// thread and a run, decide, and save both, still race: the second save is
// a revision_conflict. A coding agent's parallel tool calls are such
// processes (`hook --local` runs one per event), and a conflict there
// fails the event closed, so a whole event holds a lock of its own:
// LockEvent, on a byte of eventLockFile chosen by a key (the session).
// It is a file apart from lockFile because a save inside an event locks
// its record's byte there (on the BSDs, the whole file), which an event
// lock on that file would make wait on itself.
const eventLockFile = ".events.lock"

// CodeLockTimeout is the error of a LockEvent that gave up waiting.
const CodeLockTimeout errs.Code = "store_lock_timeout"

// Bounds of LockEvent's polling: a try costs one fcntl, and a wait ends
// at most lockPollMax after the holder lets go.
const (
	lockPollMin = time.Millisecond
	lockPollMax = 10 * time.Millisecond
)

// LockEvent waits until no other holder (another process, or another
// LockEvent of this one) has the event lock of key in the store, and holds
// it until the returned func is called. It gives up with CodeLockTimeout
// when ctx is done first, so a hung holder costs the deadline, never a
// hang; the kernel releases the lock of a process that exits, however it
// exits. Two keys share a lock only by a 40-bit hash collision, which
// costs waiting, never correctness. Where the system has neither OFD
// locks nor flock(2) (Windows), it locks nothing.
func (s *Store) LockEvent(ctx context.Context, key string) (func(), error) {
	path := filepath.Join(s.dir, eventLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the store's event lock: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	off := int64(h.Sum64() % slots)
	wait := lockPollMin
	var timer *time.Timer
	for {
		ok, err := tryLock(f, off, 1)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			return func() { f.Close() }, nil
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, errs.Wrap(CodeLockTimeout, context.Cause(ctx),
				"another event of the same session still held %s when this one had to answer; "+
					"if that repeats, look for a hung awaken-lua process, or give the hook a longer --timeout", path)
		case <-timer.C:
		}
		wait = min(2*wait, lockPollMax)
	}
}
