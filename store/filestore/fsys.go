package filestore

import (
	"io/fs"
	"os"
	"runtime"
)

// fileSystem is what a Store does to the disk. Every byte a Store writes
// and every rename, removal and fsync goes through it, so a test can record
// the steps of a save (and their order) or make any one of them fail;
// Open uses the os package.
type fileSystem interface {
	MkdirAll(path string, perm fs.FileMode) error
	ReadDir(dir string) ([]fs.DirEntry, error)
	ReadFile(path string) ([]byte, error)
	Lstat(path string) (fs.FileInfo, error)
	// CreateTemp makes a new file in dir, as os.CreateTemp.
	CreateTemp(dir, pattern string) (tempFile, error)
	// OpenAppend opens path for appending, creating it (mode 0o600) if
	// it does not exist.
	OpenAppend(path string) (tempFile, error)
	Rename(from, to string) error
	Remove(path string) error
	// Link gives the file at from a second name, to.
	Link(from, to string) error
	// Truncate cuts the file at path to size bytes and fsyncs it, so the
	// cut survives a crash.
	Truncate(path string, size int64) error
	// SyncDir fsyncs a directory, making renames and removals in it durable.
	SyncDir(dir string) error
}

// tempFile is the file a save writes before renaming it into place, or a
// run's log of changes that a save appends to.
type tempFile interface {
	Name() string
	Write(b []byte) (int, error)
	Sync() error
	Close() error
}

// osFS is the real file system.
type osFS struct{}

func (osFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) ReadDir(dir string) ([]fs.DirEntry, error)    { return os.ReadDir(dir) }
func (osFS) ReadFile(path string) ([]byte, error)         { return os.ReadFile(path) }
func (osFS) Lstat(path string) (fs.FileInfo, error)       { return os.Lstat(path) }
func (osFS) Rename(from, to string) error                 { return os.Rename(from, to) }
func (osFS) Remove(path string) error                     { return os.Remove(path) }
func (osFS) Link(from, to string) error                   { return os.Link(from, to) }

func (osFS) CreateTemp(dir, pattern string) (tempFile, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) OpenAppend(path string) (tempFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Truncate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncDir fsyncs a directory. Windows cannot fsync a directory opened this
// way, so there it is skipped and a rename is as durable as the file system
// makes it.
func (osFS) SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
