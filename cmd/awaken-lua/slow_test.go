package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/model"
)

// noticeBuffer is a buffer that tells when something was first written.
type noticeBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	once    sync.Once
	written chan struct{}
}

func (b *noticeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.once.Do(func() { close(b.written) })
	return b.buf.Write(p)
}

func (b *noticeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSlowModelIsReported: an inference that outlasts the threshold is
// reported while it runs, and nothing is printed after it answered. The
// model answers once the notice is out (or after 10s, and then the test
// fails): an answer after a fixed sleep raced the threshold's timer on a
// busy machine.
func TestSlowModelIsReported(t *testing.T) {
	buf := &noticeBuffer{written: make(chan struct{})}
	slow := model.ModelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		select {
		case <-buf.written:
		case <-time.After(10 * time.Second):
		}
		return model.Response{Text: "ok"}, nil
	})
	m := slowModel{Model: slow, w: buf, after: 20 * time.Millisecond}
	if _, err := m.Infer(context.Background(), model.Request{}); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	if !strings.Contains(got, "waiting for the model") {
		t.Fatalf("no notice: %q", got)
	}
	n := strings.Count(got, "\n")
	time.Sleep(50 * time.Millisecond)
	if strings.Count(buf.String(), "\n") != n {
		t.Fatal("a notice came after the answer")
	}
	var out bytes.Buffer
	fast := slowModel{Model: model.ModelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		return model.Response{Text: "ok"}, nil
	}), w: &out, after: time.Second}
	if _, err := fast.Infer(context.Background(), model.Request{}); err != nil || out.Len() != 0 {
		t.Fatalf("a fast model is not reported: %q %v", out.String(), err)
	}
}
