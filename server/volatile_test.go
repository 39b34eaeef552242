package server

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/run"
)

// countingStore counts the runs saved, over a memory store.
type countingStore struct {
	*run.MemoryStore
	puts atomic.Int64
}

func (c *countingStore) PutRun(ctx context.Context, cp run.Checkpoint) error {
	c.puts.Add(1)
	return c.MemoryStore.PutRun(ctx, cp)
}

// durableStore is a counting store that says it is durable.
type durableStore struct{ countingStore }

func (*durableStore) Volatile() bool { return false }

// Whether the sidecar saves a run after every call follows the store's
// Volatile method, not its type: a store that wraps the memory store (and
// so says it is volatile) is saved when a run leaves memory, one that says
// it is durable after every call.
func TestSavesFollowTheStoreVolatility(t *testing.T) {
	for _, tc := range []struct {
		name    string
		store   interface{ count() int64 }
		durable bool
	}{
		{"volatile", &countingStore{MemoryStore: run.NewMemoryStore()}, false},
		{"durable", &durableStore{countingStore{MemoryStore: run.NewMemoryStore()}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, "", nil)
			h, err := host.Open(context.Background(), host.Options{ConfigPath: filepath.Join(dir, "awaken.toml"),
				Store: tc.store.(run.Store)})
			if err != nil {
				t.Fatal(err)
			}
			srv := New(h, Options{Log: quietLog()})
			ts := httptest.NewServer(srv)
			sc := &sidecar{t: t, h: h, srv: srv, ts: ts}
			t.Cleanup(sc.close)
			id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "add"}}})
			sc.phase(id, "step_start", nil)
			sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
			sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("c1", "add", nil)}}})
			sc.phase(id, "tool_gate", map[string]any{"call": call("c1", "add", nil)})
			if got := tc.store.count(); (got >= 5) != tc.durable || (!tc.durable && got != 0) {
				t.Fatalf("%d saves for 5 calls that changed the run (durable: %v)", got, tc.durable)
			}
		})
	}
}

func (c *countingStore) count() int64 { return c.puts.Load() }
