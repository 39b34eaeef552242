package run_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// benchThread is a Claude Code session's thread (one call and its result)
// or, with n > 0, a conversation of n turns with a call each.
func benchThread(n int) run.Thread {
	th := run.Thread{ID: "t", Values: map[string]any{"reference.continued": false}}
	turn := func(i int) {
		id := "toolu_" + strconv.Itoa(i)
		th.Messages = append(th.Messages,
			model.Message{Role: "assistant", ToolCalls: []model.ToolCall{{ID: id, Name: "Bash",
				Args: map[string]any{"command": "npm run build && npm test", "description": "Build and test"}}}},
			model.Message{Role: "tool", ToolCallID: id, Content: strings.Repeat("output ", 30)})
	}
	if n == 0 {
		turn(0)
		return th
	}
	for i := range n {
		th.Messages = append(th.Messages, model.Message{Role: "user", Content: strings.Repeat("please ", 20)})
		turn(i)
	}
	return th
}

// BenchmarkMemoryStoreThread is the memory store's cost of saving a
// thread and of reading it back: what every run pays at its start and end.
func BenchmarkMemoryStoreThread(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		turns int
	}{{"claude-code", 0}, {"conversation-20-turns", 20}} {
		th := benchThread(c.turns)
		b.Run(c.name+"/put", func(b *testing.B) {
			m := run.NewMemoryStore()
			b.ReportAllocs()
			for b.Loop() {
				rev, err := m.PutThread(ctx, th)
				if err != nil {
					b.Fatal(err)
				}
				th.Revision = rev
			}
			th.Revision = 0
		})
		b.Run(c.name+"/get", func(b *testing.B) {
			m := run.NewMemoryStore()
			if _, err := m.PutThread(ctx, th); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := m.Thread(ctx, "t"); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
