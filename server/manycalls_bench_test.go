package server

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkStepCallsHTTP is one step of n tool calls over HTTP: us/gate is
// a tool_gate call's cost, which must not grow with n (a step costs
// O(n log n) in all). With the file store each gate saves its change to
// the run's log (one fsync), not the whole run. The largest case stays
// cheap enough for `make test`'s one pass of every benchmark; 4,000 and
// 10,000 calls were measured by hand with -bench and the list extended.
func BenchmarkStepCallsHTTP(b *testing.B) {
	for _, store := range []string{"memory", "file"} {
		for _, n := range []int{100, 1000, 2000} {
			b.Run(fmt.Sprintf("%s/calls=%d", store, n), func(b *testing.B) {
				extra := ""
				if store == "file" {
					extra = "\n[store]\nkind = \"file\"\npath = \"store\"\n"
				}
				dir := project(b, extra, map[string]string{"policy.lua": "local awaken = require(\"awaken\")\nreturn awaken.plugin{}\n"})
				sc := newSidecar(b, dir, Options{Log: quietLog()})
				var calls []any
				for i := 0; i < n; i++ {
					calls = append(calls, call(fmt.Sprintf("c%d", i), "fs_read", map[string]any{"path": "x"}))
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "fs_read"}}})
					sc.phase(id, "step_start", map[string]any{})
					sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
					sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": calls}})
					start := time.Now()
					for i := 0; i < n; i++ {
						sc.phase(id, "tool_gate", map[string]any{"call": calls[i]})
					}
					b.ReportMetric(float64(time.Since(start).Microseconds())/float64(n), "us/gate")
				}
			})
		}
	}
}
