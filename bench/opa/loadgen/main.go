// Command loadgen sends Claude Code PreToolUse events to awaken-lua's hook
// endpoint or to OPA's data API and prints decisions/s and latency, for
// `make bench-opa` (bench/opa/run.sh).
//
// It exists because the in-process Go benchmarks (make bench-serve) cannot
// drive OPA. To compare the two, each runs as its own server process and
// this one program drives both the same way: the same events, the same
// clients, the same HTTP over loopback.
//
// Each client owns one keep-alive HTTP/1.1 connection and writes its
// requests by hand into reused buffers: the generator shares the machine
// with the server, so it should take as little CPU as it can.
//
// With -rate, each client sends on a fixed schedule and a request's latency
// counts from when it was due, not from when it went out: a slow reply that
// holds up the requests behind it is charged to each of them (no
// coordinated omission). The client's own late timer wake-ups are not, as
// in the server package's load benchmarks.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The commands cycle: the second is denied (rm after &&), the others are
// allowed. The same as the server's BenchmarkServeClaudeCode.
var commands = []string{`ls -la src`, `npm run build && rm -rf dist`, `npm test`, `git status`}

type config struct {
	addr     string // host:port
	target   string // "awaken" or "opa"
	clients  int
	duration time.Duration // measured
	warmup   time.Duration // before the measured duration, not counted
	rate     float64       // requests/s over all clients; 0 = saturated
}

type result struct {
	requests           int // counted, in the measured duration
	perSec             float64
	p50, p95, p99, max time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:8181", "server `host:port`")
	flag.StringVar(&cfg.target, "target", "opa", "awaken (POST /v1/hooks/claude-code) or opa (POST /v1/data/claude/decision)")
	flag.IntVar(&cfg.clients, "clients", 16, "clients, each on its own keep-alive connection")
	flag.DurationVar(&cfg.duration, "duration", 5*time.Second, "measured duration")
	flag.DurationVar(&cfg.warmup, "warmup", time.Second, "warm-up before the measured duration (not counted)")
	flag.Float64Var(&cfg.rate, "rate", 0, "requests/s over all clients; 0 = as fast as the server answers")
	flag.Parse()
	r, err := run(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadgen: target=%s: %v\n", cfg.target, err)
		os.Exit(1)
	}
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }
	fmt.Printf("target=%s clients=%d rate=%s requests=%d decisions/s=%.0f p50-ms=%s p95-ms=%s p99-ms=%s max-ms=%s\n",
		cfg.target, cfg.clients, strconv.FormatFloat(cfg.rate, 'f', -1, 64), r.requests, r.perSec,
		ms(r.p50), ms(r.p95), ms(r.p99), ms(r.max))
}

// run drives the server as cfg says and returns what it measured, or the
// first error: a connection error or a reply other than 200 ends the run.
func run(cfg config) (result, error) {
	path, ok := map[string]string{"awaken": "/v1/hooks/claude-code", "opa": "/v1/data/claude/decision"}[cfg.target]
	if !ok {
		return result{}, fmt.Errorf("-target must be awaken or opa, not %q", cfg.target)
	}
	if cfg.clients < 1 || cfg.duration <= 0 || cfg.warmup < 0 || cfg.rate < 0 {
		return result{}, errors.New("want -clients >= 1, -duration > 0, -warmup >= 0, -rate >= 0")
	}
	// Room for each client's latencies: saturated runs on a small machine
	// stay well below 80,000/s in all (the slices grow if need be).
	clientRate := 80000 / float64(cfg.clients)
	var period time.Duration
	if cfg.rate > 0 {
		period = max(time.Duration(float64(time.Second)*float64(cfg.clients)/cfg.rate), 1)
		clientRate = float64(time.Second / period)
	}

	// Connect first, so that no dial lands in the measurement.
	head := "POST " + path + " HTTP/1.1\r\nHost: " + cfg.addr + "\r\nContent-Type: application/json\r\nContent-Length: "
	cs := make([]*client, cfg.clients)
	for i := range cs {
		conn, err := net.Dial("tcp", cfg.addr)
		if err != nil {
			return result{}, err
		}
		defer conn.Close()
		cs[i] = &client{id: i, opa: cfg.target == "opa", head: head, conn: conn, br: bufio.NewReaderSize(conn, 16<<10),
			lat: make([]time.Duration, 0, int(clientRate*cfg.duration.Seconds())+1)}
	}

	start := time.Now().Add(10 * time.Millisecond) // once every client is ready
	measure := start.Add(cfg.warmup)
	stop := measure.Add(cfg.duration)
	// A server that falls far behind, or stops answering, fails the run
	// rather than holding it up.
	deadline := stop.Add(max(cfg.duration, 5*time.Second))

	var stopped atomic.Bool // by the first client to fail
	var wg sync.WaitGroup
	errs := make([]error, len(cs))
	for i, c := range cs {
		c.conn.SetDeadline(deadline)
		// Paced clients are spread evenly over a period.
		offset := period * time.Duration(i) / time.Duration(len(cs))
		wg.Go(func() {
			if errs[i] = c.run(start, measure, stop, period, offset, &stopped); errs[i] != nil {
				stopped.Store(true)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return result{}, err
		}
	}

	var all []time.Duration
	last := stop
	for _, c := range cs {
		all = append(all, c.lat...)
		if c.last.After(last) {
			last = c.last
		}
	}
	if len(all) == 0 {
		return result{}, errors.New("no request completed in the measured duration")
	}
	slices.Sort(all)
	q := func(p float64) time.Duration { return all[int(p*float64(len(all)-1))] }
	elapsed := cfg.duration
	if period > 0 {
		// Every request due is sent: a server that fell behind shows as
		// a longer run, so fewer decisions/s.
		elapsed = last.Sub(measure)
	}
	return result{requests: len(all), perSec: float64(len(all)) / elapsed.Seconds(),
		p50: q(0.50), p95: q(0.95), p99: q(0.99), max: all[len(all)-1]}, nil
}

type client struct {
	id   int
	opa  bool
	head string // the request up to the Content-Length value
	conn net.Conn
	br   *bufio.Reader
	body []byte          // the event, reused
	req  []byte          // the request, reused
	lat  []time.Duration // counted latencies
	last time.Time       // when the last counted reply came
}

// run sends requests until stop: saturated (period 0) one as soon as the
// last reply is in, paced one every period from start+offset.
func (c *client) run(start, measure, stop time.Time, period, offset time.Duration, stopped *atomic.Bool) error {
	time.Sleep(time.Until(start))
	var ready time.Time // paced: when the last reply would have come, had the client been on time
	for i := 0; !stopped.Load(); i++ {
		c.build(i)
		due := time.Now()
		if period > 0 {
			due = start.Add(offset + time.Duration(i)*period)
		}
		if !due.Before(stop) {
			return nil
		}
		if period > 0 {
			time.Sleep(time.Until(due))
		}
		sent := time.Now()
		if err := c.roundTrip(); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("%w: the server fell far behind or stopped answering", err)
			}
			return fmt.Errorf("client %d, request %d: %w\nrequest body: %s", c.id, i, err, c.body)
		}
		end := time.Now()
		took := end.Sub(sent)
		if period > 0 {
			// On the client's ideal timeline the request goes out when it
			// is due or when the previous reply came, whichever is later,
			// and takes what it took; its latency counts from when it was
			// due.
			if ready.Before(due) {
				ready = due
			}
			ready = ready.Add(took)
			took = ready.Sub(due)
		}
		// Paced, every request due in the measured duration counts, however
		// late its reply; saturated, those whose reply came in it.
		if !due.Before(measure) && (period > 0 || end.Before(stop)) {
			c.lat = append(c.lat, took)
			c.last = end
		}
	}
	return nil
}

// build writes client c's i-th request: a PreToolUse event with a fresh
// tool_use_id, each session getting two of them (as a session's tool
// calls come), wrapped in {"input": ...} for OPA. Appending by hand into
// the reused buffers allocates nothing.
func (c *client) build(i int) {
	b := c.body[:0]
	if c.opa {
		b = append(b, `{"input":`...)
	}
	b = append(b, `{"session_id":"s`...)
	b = strconv.AppendInt(b, int64(c.id), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(i/2), 10)
	b = append(b, `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"`...)
	b = append(b, commands[i%len(commands)]...)
	b = append(b, `","description":"x"},"tool_use_id":"toolu_`...)
	b = strconv.AppendInt(b, int64(c.id), 10)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `"}`...)
	if c.opa {
		b = append(b, '}')
	}
	c.body = b

	r := append(c.req[:0], c.head...)
	r = strconv.AppendInt(r, int64(len(b)), 10)
	r = append(r, "\r\n\r\n"...)
	c.req = append(r, b...)
}

// roundTrip sends c.req and reads the reply: the status line, the headers,
// and Content-Length bytes of body, discarded (a 204 has none). It is an
// error unless the status is 200.
func (c *client) roundTrip() error {
	if _, err := c.conn.Write(c.req); err != nil {
		return err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return err
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return fmt.Errorf("not an HTTP reply: %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return fmt.Errorf("not an HTTP reply: %q", line)
	}
	length := -1
	for {
		if line, err = c.br.ReadSlice('\n'); err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if k, v, _ := bytes.Cut(line, []byte(":")); bytes.EqualFold(k, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil || length < 0 {
				return fmt.Errorf("bad header %q", line)
			}
		}
	}
	if status == 204 {
		length = 0
	}
	if length < 0 {
		return fmt.Errorf("HTTP %d without Content-Length", status)
	}
	if status != 200 {
		body, _ := c.br.Peek(min(length, 512))
		return fmt.Errorf("HTTP %d: %s", status, bytes.TrimSpace(body))
	}
	_, err = c.br.Discard(length)
	return err
}
