package filestore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lstatFailFS fails every look at a set-aside name with an I/O error.
type lstatFailFS struct{ osFS }

func (lstatFailFS) Lstat(path string) (fs.FileInfo, error) {
	if strings.Contains(path, corruptSuffix) {
		return nil, &fs.PathError{Op: "lstat", Path: path, Err: syscall.EIO}
	}
	return osFS{}.Lstat(path)
}

// A set-aside whose look for a free name fails (an I/O error, a
// directory it may not read) fails, leaving the corrupt file in place,
// rather than looking at the next name for ever.
func TestSetAsideStopsOnAFailedLook(t *testing.T) {
	dir := t.TempDir()
	s, err := openFS(dir, nil, lstatFailFS{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, threadsDir, "t.json")
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Thread(context.Background(), "t")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("Thread = %v, want the failed look's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("setting a corrupt file aside did not return when looking for a free name failed")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the corrupt file must stay where it was: %v", err)
	}
}
