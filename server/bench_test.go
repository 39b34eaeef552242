package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchGateLua is a permission-style gate: it reads the call's name and
// arguments and decides; most calls pass, as in real use.
const benchGateLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "perm" }
local deny = { rm = true, mkfs = true, dd = true }
p:tool_gate(function(ctx, call)
  if call.name == "shell" and deny[call.args.cmd] then return awaken.block("not allowed") end
  if call.name == "deploy" and not call.resume then return awaken.suspend { message = "deploy?" } end
  if call.args.path == ".env" then return awaken.set_result(awaken.error("secret")) end
end)
return p
`

// callsPerRun bounds the calls gated in one step (a generous step: agents
// make one to four calls per step). A step records all its calls at each
// decision, so gating thousands in one step would measure that instead.
const callsPerRun = 8

const clients = 16

// BenchmarkServeToolGate is SPEC §14's sidecar figure: tool_gate decisions
// over a real loopback HTTP server with 16 concurrent clients, each call a
// fresh decision (evaluated by a Lua gate and recorded in the run). Runs are
// brought to their step before the timer starts. It reports decisions/s and
// the p50 and p99 latency of one decision. net-http-floor is the same load
// against a handler that only answers a canned decision: what loopback
// HTTP with 16 clients in one process costs on this machine.
func BenchmarkServeToolGate(b *testing.B) {
	b.Run("sidecar", func(b *testing.B) { benchSidecar(b, quietLog()) })
	b.Run("sidecar+access-log", func(b *testing.B) {
		benchSidecar(b, slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})))
	})
	b.Run("net-http-floor", func(b *testing.B) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"decision":"allow","args":{"path":"src/main.go","line":12},"revision":3}` + "\n"))
		}))
		defer ts.Close()
		load(b, ts.URL, func(c, i int) string { return "/v1/runs/x/phases/tool_gate" })
	})
}

func benchSidecar(b *testing.B, log *slog.Logger) {
	sc := newSidecar(b, project(b, "", map[string]string{"perm.lua": benchGateLua}), Options{Log: log, MaxConcurrent: 256})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients}}
	post := func(path, body string) ([]byte, error) {
		resp, err := client.Post(sc.ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("%s: %d %s", path, resp.StatusCode, out)
		}
		return out, err
	}
	// Runs, each where the model answered: ready for tool_gate.
	per := (b.N + clients - 1) / clients
	runs := make([][]string, clients)
	var wg sync.WaitGroup
	errc := make(chan error, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < (per+callsPerRun-1)/callsPerRun; i++ {
				out, err := post("/v1/runs", `{"tools":[{"name":"shell"},{"name":"fs_read"}]}`)
				if err != nil {
					errc <- err
					return
				}
				id := string(bytes.Split(bytes.Split(out, []byte(`"run_id":"`))[1], []byte(`"`))[0])
				for _, p := range [][2]string{{"step_start", `{}`}, {"before_inference", `{"request":{}}`},
					{"after_inference", `{"response":{"tool_calls":[]}}`}} {
					if _, err := post("/v1/runs/"+id+"/phases/"+p[0], p[1]); err != nil {
						errc <- err
						return
					}
				}
				runs[c] = append(runs[c], id)
			}
		}(c)
	}
	wg.Wait()
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	client.CloseIdleConnections()
	load(b, sc.ts.URL, func(c, i int) string { return "/v1/runs/" + runs[c][i/callsPerRun] + "/phases/tool_gate" })
}

// load sends b.N tool_gate requests from 16 clients and reports the
// figures.
func load(b *testing.B, base string, path func(client, i int) string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients, DisableCompression: true}}
	defer client.CloseIdleConnections()
	per := (b.N + clients - 1) / clients
	lat := make([][]time.Duration, clients)
	errc := make(chan error, clients)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for c := 0; c < clients; c++ {
		n := min(per, max(b.N-c*per, 0))
		wg.Add(1)
		go func(c, n int) {
			defer wg.Done()
			lat[c] = make([]time.Duration, 0, n)
			body := make([]byte, 0, 128)
			for i := 0; i < n; i++ {
				body = append(body[:0], `{"call":{"id":"c`...)
				body = strconv.AppendInt(body, int64(i%callsPerRun+1), 10)
				tool, arg := "fs_read", `{"path":"src/main.go","line":12}`
				switch i % 8 {
				case 3:
					tool, arg = "shell", `{"cmd":"ls","dir":"/tmp"}`
				case 7:
					tool, arg = "fs_read", `{"path":".env"}`
				}
				body = append(body, `","name":"`+tool+`","args":`+arg+`}}`...)
				t0 := time.Now()
				resp, err := client.Post(base+path(c, i), "application/json", bytes.NewReader(body))
				if err != nil {
					errc <- err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errc <- fmt.Errorf("tool_gate: status %d", resp.StatusCode)
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}(c, n)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(float64(len(all))*p))]) / float64(time.Millisecond)
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkToolGateHandler is the sidecar's own cost of one fresh
// tool_gate decision, without sockets: the handler called in process.
// The difference to BenchmarkServeToolGate is net/http on both ends.
func BenchmarkToolGateHandler(b *testing.B) {
	sc := newSidecar(b, project(b, "", map[string]string{"perm.lua": benchGateLua}), Options{Log: quietLog()})
	h := sc.srv.Handler()
	send := func(path, body string) []byte {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(body)))
		if rec.Code/100 != 2 {
			b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}
	newRun := func() string {
		out := send("/v1/runs", `{"tools":[{"name":"fs_read"}]}`)
		id := string(bytes.Split(bytes.Split(out, []byte(`"run_id":"`))[1], []byte(`"`))[0])
		send("/v1/runs/"+id+"/phases/step_start", `{}`)
		send("/v1/runs/"+id+"/phases/before_inference", `{"request":{}}`)
		send("/v1/runs/"+id+"/phases/after_inference", `{"response":{"tool_calls":[]}}`)
		return id
	}
	id := newRun()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%callsPerRun == 0 && i > 0 {
			b.StopTimer()
			id = newRun()
			b.StartTimer()
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v1/runs/"+id+"/phases/tool_gate",
			strings.NewReader(`{"call":{"id":"c`+strconv.Itoa(i%callsPerRun)+`","name":"fs_read","args":{"path":"src/main.go","line":12}}}`))
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
