package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/model"
)

type sleepyModel struct{ d time.Duration }

func (m sleepyModel) Infer(ctx context.Context, req model.Request) (model.Response, error) {
	time.Sleep(m.d)
	return model.Response{Text: "ok"}, nil
}

// TestSlowModelIsReported: an inference that outlasts the threshold is
// reported while it runs, and nothing is printed after it answered.
func TestSlowModelIsReported(t *testing.T) {
	var buf bytes.Buffer
	m := slowModel{Model: sleepyModel{d: 200 * time.Millisecond}, w: &buf, after: 20 * time.Millisecond}
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
	buf.Reset()
	fast := slowModel{Model: sleepyModel{}, w: &buf, after: time.Second}
	if _, err := fast.Infer(context.Background(), model.Request{}); err != nil || buf.Len() != 0 {
		t.Fatalf("a fast model is not reported: %q %v", buf.String(), err)
	}
}
