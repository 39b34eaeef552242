package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// Clients that send their bodies slowly do not hold concurrency slots: the
// body is read (bounded by BodyTimeout) before a request takes one, so other
// clients are served meanwhile, and the slow ones get 408 request_timeout.
// (Before, a slot was taken first: MaxConcurrent slow uploads made every API
// call answer 429 while /healthz stayed green.)
func TestSlowBodiesHoldNoSlot(t *testing.T) {
	h := openHost(t, project(t, "", nil))
	srv := New(h, Options{Log: quietLog(), MaxConcurrent: 2, BodyTimeout: 500 * time.Millisecond})
	var entered atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		srv.ServeHTTP(w, r)
	}))
	sc := &sidecar{t: t, h: h, srv: srv, ts: ts}
	t.Cleanup(sc.close)

	const slow = 4 // twice MaxConcurrent
	conns := make([]net.Conn, slow)
	for i := range conns {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		fmt.Fprintf(c, "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"tools\":")
	}
	until(t, "the slow requests reach the handler", func() bool { return entered.Load() >= slow })
	for i := range 3 {
		sc.must(http.StatusCreated, "POST", "/v1/runs", map[string]any{"thread_id": fmt.Sprintf("fast-%d", i)})
	}
	for i, c := range conns {
		if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("slow client %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !bytes.Contains(body, []byte(`"request_timeout"`)) {
			t.Fatalf("slow client %d: %d %s", i, resp.StatusCode, body)
		}
	}
}

// Host must be loopback or the listen address (DNS rebinding), Origin must
// be the sidecar's own (CSRF), on every endpoint.
func TestHostAndOrigin(t *testing.T) {
	dir := project(t, "", nil)
	sc := newSidecar(t, dir, Options{Log: quietLog()})
	_, port, _ := net.SplitHostPort(sc.ts.Listener.Addr().String())
	create := map[string]any{"tools": []any{}}
	for _, tc := range []struct {
		name   string
		hdr    []string
		status int
		code   string
	}{
		{"loopback address", []string{"Host", "127.0.0.1:" + port}, 201, ""},
		{"localhost", []string{"Host", "localhost:" + port}, 201, ""},
		{"LOCALHOST", []string{"Host", "LOCALHOST:" + port}, 201, ""},
		{"ipv6 loopback", []string{"Host", "[::1]:" + port}, 201, ""},
		{"another loopback", []string{"Host", "127.0.0.2"}, 201, ""},
		{"rebound name", []string{"Host", "attacker.example:" + port}, 403, "host_not_allowed"},
		{"rebound name without port", []string{"Host", "attacker.example"}, 403, "host_not_allowed"},
		{"LAN address", []string{"Host", "192.168.1.5:" + port}, 403, "host_not_allowed"},
		{"localhost lookalike", []string{"Host", "localhost.attacker.example"}, 403, "host_not_allowed"},
		{"own origin", []string{"Host", "localhost:" + port, "Origin", "http://localhost:" + port}, 201, ""},
		{"foreign origin", []string{"Origin", "https://attacker.example"}, 403, "origin_not_allowed"},
		{"null origin", []string{"Origin", "null"}, 403, "origin_not_allowed"},
		{"other port", []string{"Host", "localhost:" + port, "Origin", "http://localhost:3000"}, 403, "origin_not_allowed"},
		{"other scheme", []string{"Host", "localhost:" + port, "Origin", "file://localhost:" + port}, 403, "origin_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sc.call("POST", "/v1/runs", create, tc.hdr...)
			if tc.code == "" {
				if r.status != tc.status {
					t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.raw)
				}
				return
			}
			problemOK(t, r, tc.status, tc.code)
			// Probes and the Claude Code adapter too.
			problemOK(t, sc.call("GET", "/healthz", nil, tc.hdr...), tc.status, tc.code)
			problemOK(t, sc.call("POST", "/v1/hooks/claude-code", map[string]any{}, tc.hdr...), tc.status, tc.code)
		})
	}
}

// The listen address's own name is accepted; listening on every address
// (with a token) accepts any Host.
func TestHostRuleFollowsTheListenAddress(t *testing.T) {
	for _, tc := range []struct {
		addr, host string
		ok         bool
	}{
		{"", "127.0.0.1:7878", true},
		{"", "sidecar.internal:7878", false},
		{"sidecar.internal:7878", "sidecar.internal:7878", true},
		{"sidecar.internal:7878", "SIDECAR.internal", true},
		{"sidecar.internal:7878", "other.internal:7878", false},
		{"10.0.0.5:7878", "10.0.0.5:7878", true},
		{"10.0.0.5:7878", "10.0.0.6:7878", false},
		{"[fd00::5]:7878", "[fd00::5]:7878", true},
		{"0.0.0.0:7878", "sidecar:7878", true},
		{"[::]:7878", "anything", true},
		{":7878", "anything", true},
	} {
		r := httptest.NewRequest("GET", "/healthz", nil)
		r.Host = tc.host
		err := newHostRule(tc.addr).check(r)
		if (err == nil) != tc.ok {
			t.Errorf("listening on %q, Host %q: %v, want ok %v", tc.addr, tc.host, err, tc.ok)
		}
	}
}

// A POST body must be declared as JSON: 415 unsupported_media_type
// otherwise, on every endpoint that takes one (a browser page sends forms
// cross-site without asking). A POST without a body may leave it out.
func TestJSONContentType(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	body := `{"tools":[]}`
	for _, tc := range []struct {
		ct     string
		status int
	}{
		{"application/json", 201},
		{"application/json; charset=utf-8", 201},
		{"Application/JSON", 201},
		{"", 415},
		{"text/plain", 415},
		{"application/x-www-form-urlencoded", 415},
		{"multipart/form-data; boundary=x", 415},
		{"application/jsonx", 415},
	} {
		r := sc.call("POST", "/v1/runs", body, "Content-Type", tc.ct)
		if tc.status == 201 {
			if r.status != 201 {
				t.Errorf("Content-Type %q: %d %s", tc.ct, r.status, r.raw)
			}
			continue
		}
		problemOK(t, r, tc.status, "unsupported_media_type")
		problemOK(t, sc.call("POST", "/v1/hooks/claude-code", body, "Content-Type", tc.ct), tc.status, "unsupported_media_type")
	}
	sc.must(200, "POST", "/v1/plugins/reload", nil, "Content-Type", "")
}

// The default body limit is 1 MiB: a body of exactly 1 MiB is read, one
// byte more is 413 payload_too_large, declared or streamed.
func TestDefaultBodyLimit(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	body := func(n int) []byte {
		b := []byte(`{"tools":[]}`)
		return append(b, bytes.Repeat([]byte(" "), n-len(b))...)
	}
	sc.must(http.StatusCreated, "POST", "/v1/runs", body(1<<20))
	problemOK(t, sc.call("POST", "/v1/runs", body(1<<20+1)), 413, "payload_too_large")
	// Streamed, without Content-Length.
	for _, tc := range []struct {
		n      int
		status int
	}{{1 << 20, 201}, {1<<20 + 1, 413}} {
		req, err := http.NewRequest("POST", sc.ts.URL+"/v1/runs", io.MultiReader(bytes.NewReader(body(tc.n))))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/json")
		resp, err := sc.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("streamed %d bytes: %d, want %d", tc.n, resp.StatusCode, tc.status)
		}
	}
}
