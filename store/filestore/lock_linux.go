package filestore

import (
	"errors"
	"os"
	"syscall"
)

// fOFDSetlkw is F_OFD_SETLKW, the same on every Linux architecture: a
// byte-range lock owned by the open file, so two opens in one process
// exclude each other as two processes do, and closing the file releases it.
const fOFDSetlkw = 0x26

// lockRange opens the lock file and waits for a write lock on n bytes at
// off (n = 0: to the end of every offset); closing the file releases it.
func lockRange(path string, off, n int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: off, Len: n}
	for {
		err = syscall.FcntlFlock(f.Fd(), fOFDSetlkw, &lk)
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

// fOFDSetlk is F_OFD_SETLK: fOFDSetlkw without the wait.
const fOFDSetlk = 0x25

// tryLock takes a write lock on n bytes of f at off if no other open file
// holds one there, and reports whether it did.
func tryLock(f *os.File, off, n int64) (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: off, Len: n}
	for {
		err := syscall.FcntlFlock(f.Fd(), fOFDSetlk, &lk)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES):
			return false, nil
		case !errors.Is(err, syscall.EINTR):
			return false, err
		}
	}
}
