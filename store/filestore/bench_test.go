package filestore

import (
	"context"
	"fmt"
	"testing"

	"github.com/awaken-lua/awaken-lua/run"
)

func benchThread() run.Thread {
	values := map[string]any{}
	for i := range 20 {
		switch i % 4 {
		case 0:
			values[fmt.Sprintf("plugin%d.count", i)] = float64(i)
		case 1:
			values[fmt.Sprintf("plugin%d.name", i)] = fmt.Sprintf("value number %d", i)
		case 2:
			values[fmt.Sprintf("plugin%d.list", i)] = []any{"a", "b", float64(i), true}
		default:
			values[fmt.Sprintf("plugin%d.obj", i)] = map[string]any{"used": float64(i * 100), "limit": 1e5, "tags": []any{"x"}}
		}
	}
	return run.Thread{ID: "bench-thread", Values: values}
}

// BenchmarkPutThread is one compare-and-swap save of a thread with 20
// values: read and decode the current revision, encode, write, two fsyncs,
// rename. The fsyncs dominate on real disks.
func BenchmarkPutThread(b *testing.B) {
	ctx := context.Background()
	s := open(b, b.TempDir())
	th := benchThread()
	b.ReportAllocs()
	for b.Loop() {
		rev, err := s.PutThread(ctx, th)
		if err != nil {
			b.Fatal(err)
		}
		th.Revision = rev
	}
}

// BenchmarkThread is one load of the same thread.
func BenchmarkThread(b *testing.B) {
	ctx := context.Background()
	s := open(b, b.TempDir())
	if _, err := s.PutThread(ctx, benchThread()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := s.Thread(ctx, "bench-thread"); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
