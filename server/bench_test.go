package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	rtmetrics "runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/internal/gctune"
	"github.com/awaken-lua/awaken-lua/replay"
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

// BenchmarkServeToolGate is the README Speed table's sidecar figure: tool_gate decisions
// over a real loopback HTTP server with 16 concurrent clients, each call a
// fresh decision (evaluated by a Lua gate and recorded in the run). Runs are
// brought to their step before the timer starts. It reports decisions/s and
// the latency of one decision, with the clients as fast as they can and at
// 10,000 decisions/s in all (the target rate). net-http-floor is the same
// load against a handler that only answers a canned decision: what loopback
// HTTP with 16 clients in one process costs on this machine.
func BenchmarkServeToolGate(b *testing.B) {
	b.Run("sidecar", asServe(func(b *testing.B) { benchSidecar(b, quietLog(), 0) }))
	b.Run("sidecar-at-10k", asServe(func(b *testing.B) { benchSidecar(b, quietLog(), 10000) }))
	b.Run("sidecar+access-log-at-10k", asServe(func(b *testing.B) {
		benchSidecar(b, slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})), 10000)
	}))
	for _, rate := range []float64{0, 10000} {
		name := "net-http-floor"
		if rate > 0 {
			name += "-at-10k"
		}
		b.Run(name, asServe(func(b *testing.B) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"decision":"allow","args":{"path":"src/main.go","line":12},"revision":3}` + "\n"))
			}))
			defer ts.Close()
			loadAt(b, ts.URL, rate, func(c, i int) string { return "/v1/runs/x/phases/tool_gate" }, runEnds(func(c, i int) string { return "x" }))
		}))
	}
}

// asServe runs a benchmark with the Go runtime set up as awaken-lua serve
// sets it (gctune). It wraps each sub-benchmark, not the parent: testing
// sets GOMAXPROCS afresh for every benchmark it runs.
func asServe(f func(b *testing.B)) func(b *testing.B) {
	return func(b *testing.B) {
		defer gctune.TuneGC()()
		f(b)
	}
}

func benchSidecar(b *testing.B, log *slog.Logger, rate float64) {
	// Every run the benchmark gates in is started before the clock, all in
	// progress at once: as many as it needs stay in memory.
	sc := newSidecar(b, project(b, "", map[string]string{"perm.lua": benchGateLua}),
		Options{Log: log, MaxConcurrent: 256, MaxRuns: math.MaxInt})
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
					{"after_inference", benchResponse(1, true)}} {
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
	loadAt(b, sc.ts.URL, rate, func(c, i int) string { return "/v1/runs/" + runs[c][i/callsPerRun] + "/phases/tool_gate" },
		runEnds(func(c, i int) string { return runs[c][i/callsPerRun] }))
}

// benchResponse is the model's answer that announces the calls a
// benchmark then gates: c<first> to c<first+callsPerRun-1>, with the tool
// names that the load generators send for them (mixed: a shell call
// among them, as BenchmarkServeToolGate sends).
func benchResponse(first int, mixed bool) string {
	calls := make([]string, callsPerRun)
	for i := range calls {
		tool, arg := "fs_read", `{"path":"src/main.go","line":12}`
		if mixed && i%8 == 3 {
			tool, arg = "shell", `{"cmd":"ls","dir":"/tmp"}`
		}
		calls[i] = `{"id":"c` + strconv.Itoa(first+i) + `","name":"` + tool + `","args":` + arg + `}`
	}
	return `{"response":{"tool_calls":[` + strings.Join(calls, ",") + `]}}`
}

// runEnds says when a client is done with a run: after its last call it
// deletes it, as an agent ends its runs, so the sidecar holds the runs in
// progress rather than every run the benchmark made.
func runEnds(id func(c, i int) string) func(c, i int) string {
	return func(c, i int) string {
		if (i+1)%callsPerRun != 0 {
			return ""
		}
		return "/v1/runs/" + id(c, i)
	}
}

// loadAt sends b.N tool_gate requests from 16 clients, each on its own
// keep-alive connection, at rate decisions/s in all (0: as fast as they
// can), and reports decisions/s and the p50, p95 and p99 latency.
//
// Paced latency counts from when a request was due (no coordinated
// omission: a slow reply that holds up the requests after it is charged to
// each of them), on the timeline the client would have kept had its timers
// been exact: its sleeps overshoot (by 0.6 ms median and up to a few ms on
// this VM), and that lateness is the client's, not the server's.
func loadAt(b *testing.B, base string, rate float64, path, end func(client, i int) string) {
	loadBodies(b, base, rate, false, path, end, gateBody)
}

// The warm-up (warmUp) of a benchmark of b.N >= warmFrom requests (the
// rounds that only size b.N go without): warmMin, then until the collector
// finishes a cycle, at most warmMax in all.
const (
	warmFrom = 1000
	warmMin  = time.Second
	warmMax  = 5 * time.Second
)

// warmUp puts the measured load on the sidecar, from clients numbered
// clients..2*clients-1 on conns, until its heap has grown to the size it
// keeps under that load: the collector has finished a cycle. Until then
// allocations touch memory the process never had, and on a VM each new
// page is a fault the host serves (hundreds of replies over 2 ms in the
// first seconds of a fresh sidecar at 10,000/s); a long-running sidecar
// pays that once. The sessions it opens stay, as a running sidecar's do.
func warmUp(conns []*rawConn, rate float64, path, end func(client, i int) string, mk func(body []byte, c, i int) []byte) error {
	var period time.Duration
	if rate > 0 {
		period = time.Duration(float64(time.Second) * clients / rate)
	}
	var stop atomic.Bool
	errc := make(chan error, len(conns))
	var wg sync.WaitGroup
	start := time.Now()
	for c, rc := range conns {
		wg.Add(1)
		go func(c int, rc *rawConn) {
			defer wg.Done()
			body := make([]byte, 0, 128)
			first := start.Add(time.Duration(c) * period / clients)
			for i := 0; !stop.Load(); i++ {
				if d := time.Until(first.Add(time.Duration(i) * period)); period > 0 && d > 0 {
					time.Sleep(d)
				}
				body = mk(body, clients+c, i)
				status, err := rc.do("POST", path(clients+c, i), body)
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("warm-up %s: status %d", path(clients+c, i), status)
				}
				if err == nil {
					_, err = endRun(rc, end(clients+c, i))
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}(c, rc)
	}
	// A cycle that ends after warmMin started under the load.
	var gc0 uint64
	for {
		time.Sleep(10 * time.Millisecond)
		since := time.Since(start)
		if gc0 == 0 && since >= warmMin {
			gc0 = readGC().cycles
		}
		if since >= warmMax || (gc0 > 0 && readGC().cycles > gc0) || len(errc) > 0 {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// gateBody is the i-th tool_gate request's body: fresh calls, one in four
// a shell command, one in eight a read of .env.
func gateBody(body []byte, c, i int) []byte {
	body = append(body[:0], `{"call":{"id":"c`...)
	body = strconv.AppendInt(body, int64(i%callsPerRun+1), 10)
	tool, arg := "fs_read", `{"path":"src/main.go","line":12}`
	switch i % 8 {
	case 3:
		tool, arg = "shell", `{"cmd":"ls","dir":"/tmp"}`
	case 7:
		tool, arg = "fs_read", `{"path":".env"}`
	}
	body = append(body, `","name":"`...)
	body = append(body, tool...)
	body = append(body, `","args":`...)
	body = append(body, arg...)
	return append(body, `}}`...)
}

// loadBodies is loadAt with the request bodies that mk makes. With warm,
// the clock starts once the sidecar has taken the same load for a while
// (see warmUp): mk, path and end must then take client numbers up to
// 2*clients-1, the warm-up's own.
func loadBodies(b *testing.B, base string, rate float64, warm bool, path, end func(client, i int) string, mk func(body []byte, c, i int) []byte) {
	addr := strings.TrimPrefix(base, "http://")
	per := (b.N + clients - 1) / clients
	lat := make([][]time.Duration, clients)
	errc := make(chan error, clients)
	conns := make([]*rawConn, clients)
	for c := range conns {
		rc, err := dialRaw(addr)
		if err != nil {
			b.Fatal(err)
		}
		defer rc.Close()
		conns[c] = rc
	}
	var period time.Duration
	if rate > 0 {
		period = time.Duration(float64(time.Second) * clients / rate)
	}
	if warm && b.N >= warmFrom {
		if err := warmUp(conns, rate, path, end, mk); err != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	gc0 := readGC()
	start := time.Now()
	for c := 0; c < clients; c++ {
		n := min(per, max(b.N-c*per, 0))
		wg.Add(1)
		go func(c, n int) {
			defer wg.Done()
			rc := conns[c]
			lat[c] = make([]time.Duration, 0, n)
			body := make([]byte, 0, 128)
			first := start.Add(time.Duration(c) * period / clients)
			var ready time.Time // when the previous reply would have come, had the client been on time
			for i := 0; i < n; i++ {
				at := first.Add(time.Duration(i) * period)
				if period > 0 {
					if d := time.Until(at); d > 0 {
						time.Sleep(d)
					}
				}
				body = mk(body, c, i)
				sent := time.Now()
				status, err := rc.do("POST", path(c, i), body)
				if err != nil {
					errc <- err
					return
				}
				if status != http.StatusOK {
					errc <- fmt.Errorf("%s: status %d", path(c, i), status)
					return
				}
				took := time.Since(sent)
				if period == 0 {
					lat[c] = append(lat[c], took)
					if _, err := endRun(rc, end(c, i)); err != nil {
						errc <- err
						return
					}
					continue
				}
				// On the client's ideal timeline the request goes out when it
				// is due or when the previous reply came, whichever is later,
				// and takes what it took; its latency counts from when it
				// was due.
				out := at
				if ready.After(out) {
					out = ready
				}
				ready = out.Add(took)
				lat[c] = append(lat[c], ready.Sub(at))
				// Not a decision: not counted, but it holds the client up
				// like one.
				took, err = endRun(rc, end(c, i))
				if err != nil {
					errc <- err
					return
				}
				ready = ready.Add(took)
			}
		}(c, n)
	}
	wg.Wait()
	elapsed := time.Since(start)
	gc1 := readGC()
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
	// The collector's share: a tail with no cycle in the run is the
	// machine's, not the sidecar's heap (server/README.md, Performance).
	b.ReportMetric(float64(gc1.cycles-gc0.cycles), "gc-cycles")
	b.ReportMetric(100*(gc1.cpu-gc0.cpu)/(elapsed.Seconds()*float64(runtime.GOMAXPROCS(0))), "gc-cpu-%")
}

// gcCount is what the collector has done since the process started.
type gcCount struct {
	cycles uint64
	// cpu is the collector's CPU in seconds, updated as each cycle ends,
	// without its idle-time marking: that runs only on processors with
	// nothing else to run, so it takes no time from the replies.
	cpu float64
}

func readGC() gcCount {
	s := []rtmetrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/idle:cpu-seconds"}}
	rtmetrics.Read(s)
	return gcCount{cycles: s[0].Value.Uint64(), cpu: s[1].Value.Float64() - s[2].Value.Float64()}
}

// rawConn is one keep-alive HTTP/1.1 connection that writes a request from
// a reused buffer and skips the reply's body: net/http's client allocates
// about 80 objects a request, and in the benchmark's process that garbage
// would be collected on the server's time.
type rawConn struct {
	net.Conn
	r   *bufio.Reader
	req []byte
}

func dialRaw(addr string) (*rawConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &rawConn{Conn: c, r: bufio.NewReaderSize(c, 4096), req: make([]byte, 0, 512)}, nil
}

// endRun deletes the run at path ("" for none) and says how long it took.
func endRun(rc *rawConn, path string) (time.Duration, error) {
	if path == "" {
		return 0, nil
	}
	t0 := time.Now()
	if status, err := rc.do("DELETE", path, nil); err != nil || status/100 != 2 {
		return 0, fmt.Errorf("DELETE %s: %d %v", path, status, err)
	}
	return time.Since(t0), nil
}

// do sends one request and reads its reply; it returns the status.
func (rc *rawConn) do(method, path string, body []byte) (int, error) {
	q := append(rc.req[:0], method...)
	q = append(q, ' ')
	q = append(q, path...)
	q = append(q, " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "...)
	q = strconv.AppendInt(q, int64(len(body)), 10)
	q = append(q, "\r\n\r\n"...)
	q = append(q, body...)
	rc.req = q
	if _, err := rc.Write(q); err != nil {
		return 0, err
	}
	status, length := 0, -1
	for first := true; ; first = false {
		line, err := rc.r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case first:
			if len(line) < 12 {
				return 0, fmt.Errorf("bad status line %q", line)
			}
			status, err = strconv.Atoi(string(line[9:12]))
			if err != nil {
				return 0, fmt.Errorf("bad status line %q", line)
			}
		case len(line) == 0:
			if status == http.StatusNoContent {
				return status, nil
			}
			if length < 0 {
				return 0, fmt.Errorf("reply without Content-Length")
			}
			_, err := rc.r.Discard(length)
			return status, err
		case len(line) > 15 && bytes.EqualFold(line[:15], []byte("Content-Length:")):
			length, err = strconv.Atoi(string(bytes.TrimSpace(line[15:])))
			if err != nil {
				return 0, fmt.Errorf("bad Content-Length %q", line)
			}
		}
	}
}

// BenchmarkToolGateHandler is the sidecar's own cost of one fresh
// tool_gate decision, without sockets: the handler called in process.
// The difference to BenchmarkServeToolGate is net/http on both ends.
func BenchmarkToolGateHandler(b *testing.B) {
	sc := newSidecar(b, project(b, "", map[string]string{"perm.lua": benchGateLua}), Options{Log: quietLog()})
	h := sc.srv.Handler()
	send := func(path, body string) []byte {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://127.0.0.1"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
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
		send("/v1/runs/"+id+"/phases/after_inference", benchResponse(0, false))
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
		req := httptest.NewRequest("POST", "http://127.0.0.1/v1/runs/"+id+"/phases/tool_gate",
			strings.NewReader(`{"call":{"id":"c`+strconv.Itoa(i%callsPerRun)+`","name":"fs_read","args":{"path":"src/main.go","line":12}}}`))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkServeClaudeCode is the Claude Code figure: PreToolUse events
// over loopback HTTP from 16 clients, each with a fresh tool_use_id, half
// of them opening a new session, decided by the reference policy of
// testdata/agents/claude-code (Bash split with the shell parser, deny rm,
// ask for git push): as fast as the clients can, and at 10,000/s.
func BenchmarkServeClaudeCode(b *testing.B) {
	for _, c := range []struct {
		name    string
		rate    float64
		journal bool
		shadow  bool
	}{{"pre-tool-use", 0, false, false}, {"pre-tool-use-journal", 0, true, false}, {"pre-tool-use-shadow", 0, false, true},
		{"pre-tool-use-at-10k", 10000, false, false}} {
		rate := c.rate
		b.Run(c.name, asServe(func(b *testing.B) {
			dir := filepath.Join("..", "testdata", "agents", "claude-code", "policy")
			if c.journal {
				dir = journaled(b, dir)
			}
			var sc *sidecar
			var shadow *replay.Shadow
			if c.shadow {
				// The same policy as the candidate: the shadow's full cost,
				// with no disagreement to cut a run short.
				sc, shadow = shadowSidecar(b, dir, dir, 256)
			} else {
				sc = newSidecar(b, dir, Options{Log: quietLog(), MaxConcurrent: 256})
			}
			commands := []string{`ls -la src`, `npm run build && rm -rf dist`, `npm test`, `git status`}
			mk := func(body []byte, c, i int) []byte {
				body = append(body[:0], `{"session_id":"s`...)
				body = strconv.AppendInt(body, int64(c), 10)
				body = append(body, '-')
				body = strconv.AppendInt(body, int64(i/2), 10)
				body = append(body, `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"`...)
				body = append(body, commands[i%len(commands)]...)
				body = append(body, `","description":"x"},"tool_use_id":"toolu_`...)
				body = strconv.AppendInt(body, int64(c), 10)
				body = append(body, '_')
				body = strconv.AppendInt(body, int64(i), 10)
				return append(body, `"}`...)
			}
			loadBodies(b, sc.ts.URL, rate, true, func(c, i int) string { return "/v1/hooks/claude-code" },
				func(c, i int) string { return "" }, mk)
			if shadow != nil {
				// The shadow runs off the enforced path: how much it kept
				// up with is part of the figure.
				waitIdle(b, shadow)
				sum := shadow.Summary()
				b.ReportMetric(float64(sum.Dropped)/float64(b.N), "shadow-dropped/op")
			}
		}))
	}
}

// journaled copies a project directory and turns the journal on in it.
func journaled(b *testing.B, dir string) string {
	b.Helper()
	dst := b.TempDir()
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(dst, "awaken.toml")
	src, err := os.ReadFile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(src, "\n[journal]\npath = \"journal\"\n"...), 0o644); err != nil {
		b.Fatal(err)
	}
	return dst
}

// BenchmarkClaudeCodeHandler is BenchmarkServeClaudeCode's workload (fresh
// tool_use_ids, half of them opening a new session, the reference policy)
// served in process by one client, without sockets: the sidecar's own
// cost of a PreToolUse decision, and the heap the sidecar keeps per
// session it still holds (retained-B/session, retained-objs/session;
// meaningful over thousands of events, e.g. -benchtime 10000x, and past
// [server] max_runs sessions they include what the bounded stores keep).
func BenchmarkClaudeCodeHandler(b *testing.B) {
	defer gctune.TuneGC()()
	sc := newSidecar(b, filepath.Join("..", "testdata", "agents", "claude-code", "policy"), Options{Log: quietLog()})
	h := sc.srv.Handler()
	commands := []string{`ls -la src`, `npm run build && rm -rf dist`, `npm test`, `git status`}
	var body []byte
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body = append(body[:0], `{"session_id":"s`...)
		body = strconv.AppendInt(body, int64(i/2), 10)
		body = append(body, `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"`...)
		body = append(body, commands[i%len(commands)]...)
		body = append(body, `","description":"x"},"tool_use_id":"toolu_`...)
		body = strconv.AppendInt(body, int64(i), 10)
		body = append(body, `"}`...)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://127.0.0.1/v1/hooks/claude-code", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	b.StopTimer()
	// What the sessions keep between events is what every collection
	// marks: the longer a mark, the longer replies wait behind it.
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Per session the sidecar still holds: past [server] max_runs it lets
	// the least recently used go.
	sc.srv.mu.Lock()
	sessions := float64(max(len(sc.srv.runs), 1))
	sc.srv.mu.Unlock()
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/sessions, "retained-B/session")
	b.ReportMetric(float64(int64(after.HeapObjects)-int64(before.HeapObjects))/sessions, "retained-objs/session")
}
