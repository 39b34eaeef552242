package server

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"sort"
	"strconv"
	"testing"
	"time"
)

// BenchmarkClaudeCodeSession drives one long Claude Code session through
// the hook endpoint in process and reports the latency of an event at
// 1,000, 10,000 and 100,000 events, and the heap the session retains: a
// session's cost must not grow with its length. pre-only registers only
// PreToolUse (calls never close); full sends a prompt, 10 calls with Pre
// and Post, and a stop, over and over. b.N is the number of sessions, of
// $AWAKEN_CC_EVENTS events each (1,000 unless set).
func BenchmarkClaudeCodeSession(b *testing.B) {
	for _, kind := range []string{"pre-only", "full"} {
		b.Run(kind, func(b *testing.B) {
			total := 1_000 // make bench sets AWAKEN_CC_EVENTS=100000
			if s := os.Getenv("AWAKEN_CC_EVENTS"); s != "" {
				total, _ = strconv.Atoi(s)
			}
			for i := 0; i < b.N; i++ {
				ccSessionRun(b, kind, total)
			}
		})
	}
}

func ccSessionRun(b *testing.B, kind string, total int) {
	// Finished runs leave memory at once, as they do over a long session
	// (DoneRetention keeps them readable for minutes): the heap then shows
	// what the session itself holds.
	sc := ccSidecar(b, Options{DoneRetention: 10 * time.Millisecond})
	h := sc.srv.Handler()
	post := func(body []byte) time.Duration {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://127.0.0.1/v1/hooks/claude-code", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		h.ServeHTTP(rec, req)
		d := time.Since(t0)
		if rec.Code != 200 || bytes.Contains(rec.Body.Bytes(), []byte("could not evaluate")) {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
		return d
	}
	event := func(name, extra string) []byte {
		return []byte(`{"session_id":"long","hook_event_name":"` + name + `"` + extra + `}`)
	}
	marks := map[int]bool{1_000: true, 10_000: true, 100_000: true}
	var window []time.Duration
	report := func(n int) {
		sort.Slice(window, func(i, j int) bool { return window[i] < window[j] })
		b.ReportMetric(float64(window[len(window)/2].Microseconds()), "us/event@"+strconv.Itoa(n/1000)+"k")
		window = window[:0]
	}
	n := 0
	call := 0
	note := func(d time.Duration) {
		n++
		if n > 100 { // the window before each mark
			window = append(window, d)
		}
		if marks[n] {
			report(n)
		}
	}
	b.ResetTimer()
	for n < total {
		switch kind {
		case "pre-only":
			call++
			note(post(event("PreToolUse", fmt.Sprintf(`,"tool_name":"Read","tool_input":{"file_path":"f%d.go"},"tool_use_id":"t%d"`, call, call))))
		default:
			note(post(event("UserPromptSubmit", `,"prompt":"go on"`)))
			for j := 0; j < 10 && n < total; j++ {
				call++
				args := fmt.Sprintf(`,"tool_name":"Read","tool_input":{"file_path":"f%d.go"},"tool_use_id":"t%d"`, call, call)
				note(post(event("PreToolUse", args)))
				note(post(event("PostToolUse", args+`,"tool_response":"ok"`)))
			}
			note(post(event("Stop", "")))
		}
		if len(window) > 1000 {
			window = window[len(window)-1000:]
		}
	}
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "MiB-heap")
}
