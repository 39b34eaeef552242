//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package filestore

import (
	"errors"
	"os"
	"syscall"
)

// lockRange opens the lock file and waits for flock(2) on it, which is owned
// by the open file as Linux's OFD locks are. It locks the whole file, so
// there every save of one store waits for the one in progress, in this
// process too; off and n are Linux's finer grain.
func lockRange(path string, off, n int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// tryLock takes flock(2) on f if no other open file holds it, and reports
// whether it did; off and n are Linux's finer grain.
func tryLock(f *os.File, off, n int64) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case !errors.Is(err, syscall.EINTR):
			return false, err
		}
	}
}
