package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
		// A GET from another site's <img> carries no Origin.
		{"another site's page", []string{"Sec-Fetch-Site", "cross-site"}, 403, "origin_not_allowed"},
		{"a sibling site's page", []string{"Sec-Fetch-Site", "same-site"}, 403, "origin_not_allowed"},
		{"typed in the address bar", []string{"Sec-Fetch-Site", "none"}, 201, ""},
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

// A key given twice is refused the same way on every endpoint: 400
// bad_request naming the field's path, and the run does not change.
func TestDuplicateKeysAreRefused(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	id := toGate(sc, "dup")
	rev := sc.must(200, "GET", "/v1/runs/"+id, nil).num("revision")
	for _, tc := range []struct {
		path, body, field string
	}{
		{"/v1/runs", `{"thread_id":"a","thread_id":"b"}`, "thread_id"},
		{"/v1/runs", `{"tools":[{"name":"a"},{"name":"b","name":"c"}]}`, "tools[1].name"},
		{"/v1/runs/" + id + "/phases/step_start", `{"a":1,"a":2}`, "a"},
		{"/v1/runs/" + id + "/phases/before_inference", `{"request":{"messages":[{"role":"user","content":"a","content":"b"}]}}`, "request.messages[0].content"},
		{"/v1/runs/" + id + "/phases/after_inference", `{"response":{"text":"a","text":"b"}}`, "response.text"},
		{"/v1/runs/" + id + "/phases/tool_gate", `{"call":{"id":"c1","name":"add","args":{"cmd":"ls","cmd":"rm -rf /"}}}`, "call.args.cmd"},
		{"/v1/runs/" + id + "/phases/before_tool_execute", `{"call":{"id":"c1","\u0069d":"c2"}}`, "call.id"},
		{"/v1/runs/" + id + "/phases/after_tool_execute", `{"call":{"id":"c1"},"result":{"status":"success","status":"error"}}`, "result.status"},
		{"/v1/runs/" + id + "/resume", `{"decisions":[{"target":"d1","action":"resume","action":"cancel"}]}`, "decisions[0].action"},
	} {
		r := sc.call("POST", tc.path, tc.body)
		problemOK(t, r, 400, "bad_request")
		if r.str("field") != tc.field || !strings.Contains(r.str("detail"), tc.field+" is given twice") {
			t.Errorf("%s %s: field %q, want %q: %s", tc.path, tc.body, r.str("field"), tc.field, r.raw)
		}
	}
	if got := sc.must(200, "GET", "/v1/runs/"+id, nil).num("revision"); got != rev {
		t.Fatalf("a refused body changed the run: revision %v, was %v", got, rev)
	}
	// The Claude Code adapter answers 200 and, for PreToolUse, denies.
	r := sc.must(200, "POST", "/v1/hooks/claude-code",
		`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls","command":"rm -rf /"}}`)
	out, _ := r.body["hookSpecificOutput"].(map[string]any)
	if out["permissionDecision"] != "deny" || !strings.Contains(fmt.Sprint(out["permissionDecisionReason"]), "tool_input.command is given twice") {
		t.Fatalf("Claude Code with a key given twice: %s", r.raw)
	}
	// A top-level key in another case is the same field to the decoders
	// (the last one wins): it cannot turn a tool event into another.
	for _, tc := range []struct{ path, body, deny string }{
		{"/v1/hooks/claude-code", `{"session_id":"s2","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"t1",` +
			`"tool_input":{"command":"rm -rf /"},"Hook_Event_Name":"Notification"}`, `"permissionDecision":"deny"`},
		{"/v1/hooks/gemini", `{"session_id":"g2","hook_event_name":"BeforeTool","tool_name":"run_shell_command",` +
			`"tool_input":{"command":"rm -rf /"},"HOOK_EVENT_NAME":"Notification"}`, `"decision":"deny"`},
		{"/v1/hooks/cursor", `{"HOOK_EVENT_NAME":"afterFileEdit","conversation_id":"c2","hook_event_name":"beforeShellExecution",` +
			`"command":"rm -rf /","cwd":"/tmp"}`, `"permission":"deny"`},
	} {
		r := sc.must(200, "POST", tc.path, tc.body)
		if !strings.Contains(string(r.raw), tc.deny) || !strings.Contains(string(r.raw), "given twice") {
			t.Errorf("%s: %s", tc.path, r.raw)
		}
	}
}

func TestDuplicateKey(t *testing.T) {
	many := func(n int, dup string) string {
		var b strings.Builder
		b.WriteString(`{"args":{`)
		for i := range n {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(dup + `}}`)
		return b.String()
	}
	manyTop := func(n int, dup string) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range n {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(dup + `}`)
		return b.String()
	}
	for _, tc := range []struct{ body, path string }{
		{`{}`, ""},
		{`{"a":1,"b":2}`, ""},
		{`{"a":1,"a":1}`, "a"},
		{`{"a":{"b":1},"c":{"b":2}}`, ""},
		{`{"a":{"b":1,"b":2}}`, "a.b"},
		{`{"a":[{"x":1},{"x":1,"y":2,"y":3}]}`, "a[1].y"},
		{`[{"a":1},[{"b":1,"b":2}]]`, "[1][0].b"},
		{`{"a":"\"b\":1,\"b\":2","b":1}`, ""},
		{`{"\u0061":1,"a":2}`, "a"},
		{`{"a\\b":1,"a\\b":2}`, `a\b`},
		// The top level is a struct, whose fields match in any case; a
		// nested object may be a map, whose keys do not.
		{`{"A":1,"a":2}`, "a"},
		{`{"hook_event_name":"PreToolUse","Hook_Event_Name":"Stop"}`, "Hook_Event_Name"},
		{`{"x":{"A":1,"a":2}}`, ""},
		{`{"\u212a":1,"k":2}`, "k"}, // KELVIN SIGN folds to k
		{many(100, `"K5":1`), ""},
		{manyTop(100, `"K5":1`), "K5"},
		{`{"x":{"a":1},"a":{"a":1}}`, ""},
		{many(100, `"k5":1`), "args.k5"},
		{many(100, `"k99":1`), "args.k99"},
		{many(100, `"k100":1`), ""},
		{many(10, `"k3":1`), "args.k3"},
	} {
		err := duplicateKey([]byte(tc.body))
		got := ""
		if ae, ok := err.(*apiError); ok {
			got = ae.field
		} else if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if got != tc.path {
			t.Errorf("%.80s: %q, want %q", tc.body, got, tc.path)
		}
		if ref := refDuplicate([]byte(tc.body)); ref != tc.path {
			t.Errorf("%.80s: the reference says %q", tc.body, ref)
		}
	}
}

// FuzzDuplicateKey compares duplicateKey with encoding/json's tokenizer on
// any valid JSON.
func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":[{"b":1},{"b":1,"b":2}]}`, `{"\u0061":1,"a":1}`, `[1,{"x":{"y":[]}}]`, `"a"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			_ = duplicateKey(data) // must not panic
			return
		}
		got := ""
		if err := duplicateKey(data); err != nil {
			got = err.(*apiError).field
		}
		if want := refDuplicate(data); got != want {
			t.Fatalf("%q: duplicateKey says %q, encoding/json's tokens say %q", data, got, want)
		}
	})
}

// refDuplicate finds the first key an object repeats with encoding/json's
// tokenizer (at the top level, in any case), and its path as
// duplicateKey names it.
func refDuplicate(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		array bool
		index int
		key   string
		seen  map[string]bool
		inKey bool
	}
	var stack []*frame
	path := func(last string) string {
		var b strings.Builder
		for i, f := range stack {
			switch {
			case f.array:
				fmt.Fprintf(&b, "[%d]", f.index)
			default:
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				if i == len(stack)-1 {
					b.WriteString(last)
				} else {
					b.WriteString(f.key)
				}
			}
		}
		return b.String()
	}
	// value marks that a value ended in the top frame.
	value := func() {
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.array {
			top.index++
		} else {
			top.inKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{seen: map[string]bool{}, inKey: true})
			case '[':
				stack = append(stack, &frame{array: true})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			if top != nil && !top.array && top.inKey {
				dup := top.seen[v]
				if len(stack) == 1 { // the top level's keys match in any case
					for k := range top.seen {
						dup = dup || strings.EqualFold(k, v)
					}
				}
				if dup {
					return path(v)
				}
				top.seen[v] = true
				top.key, top.inKey = v, false
				continue
			}
			value()
		default:
			value()
		}
	}
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

func TestHostName(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:7878": "localhost", "LocalHost": "localhost", "127.0.0.1": "127.0.0.1", "127.0.0.1:80": "127.0.0.1",
		"[::1]:7878": "::1", "[::1]": "::1", "::1": "::1", "": "", "a.b:": "a.b",
	} {
		if got := hostName(in); got != want {
			t.Errorf("hostName(%q) = %q, want %q", in, got, want)
		}
	}
}
