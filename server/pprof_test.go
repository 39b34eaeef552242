package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Without Options.Pprof the profile paths answer 404, saying how to turn
// them on, the index's trailing slash included.
func TestPprofOff(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	for _, p := range []string{PprofPath, PprofPath + "heap", PprofPath + "profile"} {
		r := sc.call("GET", p, nil)
		problemOK(t, r, http.StatusNotFound, "bad_request")
		if !strings.Contains(r.str("detail"), "--pprof") {
			t.Fatalf("%s: %s", p, r.raw)
		}
	}
}

// With it, the profiles are served behind the token.
func TestPprofOn(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog(), Token: "tok", Pprof: true})
	problemOK(t, sc.call("GET", PprofPath+"heap", nil, "Authorization", ""), http.StatusUnauthorized, "unauthorized")
	for p, want := range map[string]string{
		PprofPath:                       "goroutine",
		PprofPath + "heap?debug=1":      "heap profile:",
		PprofPath + "goroutine?debug=1": "goroutine profile:",
		PprofPath + "cmdline":           "",
	} {
		r := sc.must(http.StatusOK, "GET", p, nil)
		if !strings.Contains(string(r.raw), want) {
			t.Fatalf("%s: no %q in\n%.400s", p, want, r.raw)
		}
	}
	// What is not a profile is told as the rest of the API tells it: a
	// problem, never a redirect or a plain-text page.
	for _, c := range []struct {
		method, path string
		status       int
		detail       string
	}{
		{"GET", PprofPath + "nosuch", http.StatusNotFound, `no profile "nosuch"`},
		{"GET", strings.TrimSuffix(PprofPath, "/"), http.StatusNotFound, "listed at " + PprofPath},
		{"POST", PprofPath + "heap", http.StatusMethodNotAllowed, "use GET"},
		{"POST", PprofPath + "symbol", http.StatusMethodNotAllowed, "use GET"},
	} {
		r := sc.call(c.method, c.path, nil)
		problemOK(t, r, c.status, "bad_request")
		if !strings.Contains(r.str("detail"), c.detail) {
			t.Fatalf("%s %s: %s", c.method, c.path, r.raw)
		}
		if c.status == http.StatusMethodNotAllowed && r.header.Get("Allow") != "GET" {
			t.Fatalf("%s %s: Allow %q", c.method, c.path, r.header.Get("Allow"))
		}
	}
}

// A CPU profile lasts the seconds asked for, even past the server's
// ReadTimeout (serve sets 30 s, and a profile takes 30 s by default):
// nothing on the way (a request deadline, the read timeout) may cut it
// short.
func TestPprofProfileOutlastsReadTimeout(t *testing.T) {
	h := openHost(t, project(t, "", nil))
	srv := New(h, Options{Log: quietLog(), Pprof: true})
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.ReadTimeout = 200 * time.Millisecond
	ts.Start()
	t.Cleanup(func() { ts.Close(); srv.Close(); h.Close() })
	start := time.Now()
	resp, err := ts.Client().Get(ts.URL + PprofPath + "profile?seconds=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if resp.StatusCode == http.StatusInternalServerError && bytes.Contains(body.Bytes(), []byte("already in use")) {
		t.Skip("the test binary profiles its own CPU (go test -cpuprofile), and a process has one CPU profile")
	}
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body.Bytes(), []byte{0x1f, 0x8b}) {
		t.Fatalf("status %d, body %.200q", resp.StatusCode, body.Bytes())
	}
	if took < 900*time.Millisecond {
		t.Fatalf("a 1 s profile came back after %v", took)
	}
}

// A trace streams while it lasts, a little at a time, and a CPU profile
// comes at its end: neither may be cut short by the deadline a reply is
// written within (Options.BodyTimeout), which is for a client that does
// not read, not for one that waits for a capture to end.
func TestPprofCaptureOutlastsReplyDeadline(t *testing.T) {
	h := openHost(t, project(t, "", nil))
	srv := New(h, Options{Log: quietLog(), Pprof: true, BodyTimeout: 300 * time.Millisecond})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close(); h.Close() })
	for _, p := range []string{"profile?seconds=2", "trace?seconds=2"} {
		resp, err := ts.Client().Get(ts.URL + PprofPath + p)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, err = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusInternalServerError && bytes.Contains(body.Bytes(), []byte("already")) {
			t.Skipf("%s: the test binary profiles itself: %s", p, body.Bytes())
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d, %d bytes, error %v", p, resp.StatusCode, body.Len(), err)
		}
	}
}
