package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func serveProject(t *testing.T, server string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"awaken.toml": "plugin_dir = \"scripts\"\n[model]\nscript = \"script.toml\"\n[server]\n" + server +
			"[agents.default]\ntools = []\n",
		"script.toml":      "[[turns]]\ntext = \"hi\"\n",
		"scripts/gate.lua": "local awaken = require(\"awaken\")\nlocal p = awaken.plugin { id = \"gate\" }\np:tool_gate(function(ctx, call) end)\nreturn p\n",
	}
	for name, src := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "awaken.toml")
}

// serve refuses a non-loopback address without a token: exit 2, and the
// message says which variable to set.
func TestServeRefusesOpenAddressWithoutToken(t *testing.T) {
	cfg := serveProject(t, "token_env = \"AWAKEN_SERVE_TEST_TOKEN\"\n")
	t.Setenv("AWAKEN_SERVE_TEST_TOKEN", "")
	var out, errOut syncBuffer
	code := cli(context.Background(), []string{"--config", cfg, "serve", "--addr", "0.0.0.0:0"}, strings.NewReader(""), &out, &errOut)
	if code != exitUsage || !strings.Contains(errOut.String(), "$AWAKEN_SERVE_TEST_TOKEN") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
	}
	if code := cli(context.Background(), []string{"--config", cfg, "serve", "extra"}, strings.NewReader(""), &out, &errOut); code != exitUsage {
		t.Fatalf("an extra argument: exit %d", code)
	}
	// A port that is not a number from 0 to 65535 is a bad flag (exit 2),
	// not a failure to listen (exit 1).
	for _, addr := range []string{"127.0.0.1:99999", "127.0.0.1:http"} {
		var errOut syncBuffer
		code := cli(context.Background(), []string{"--config", cfg, "serve", "--addr", addr}, strings.NewReader(""), &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), "port from 0 to 65535") {
			t.Fatalf("--addr %s: exit %d, stderr:\n%s", addr, code, errOut.String())
		}
	}
}

// serve on a port another process holds says what to do.
func TestServeAddressInUse(t *testing.T) {
	cfg := serveProject(t, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out, errOut syncBuffer
	code := cli(context.Background(), []string{"--config", cfg, "serve", "--addr", ln.Addr().String()}, strings.NewReader(""), &out, &errOut)
	if code != exitFailed || !strings.Contains(errOut.String(), "another process holds "+ln.Addr().String()) || !strings.Contains(errOut.String(), "--addr") {
		t.Fatalf("a port in use: exit %d, stderr:\n%s", code, errOut.String())
	}
}

// serve listens, answers with the token, and shuts down cleanly when its
// context ends (SIGINT and SIGTERM cancel it in main).
func TestServeStartsAndShutsDown(t *testing.T) {
	cfg := serveProject(t, "token_env = \"AWAKEN_SERVE_TEST_TOKEN\"\n")
	t.Setenv("AWAKEN_SERVE_TEST_TOKEN", "tok")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli(ctx, []string{"--config", cfg, "serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), &out, &errOut)
	}()
	addr := regexp.MustCompile(`serving on (http://[0-9.:]+)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s\n%s", out.String(), errOut.String())
		}
	}
	get := func(path, token string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("/readyz", ""); c != 200 {
		t.Fatalf("readyz: %d", c)
	}
	if c := get("/v1/plugins", ""); c != 401 {
		t.Fatalf("plugins without the token: %d", c)
	}
	if c := get("/v1/plugins", "tok"); c != 200 {
		t.Fatalf("plugins with the token: %d", c)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d:\n%s", code, errOut.String())
		}
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not shut down")
	}
	if !strings.Contains(errOut.String(), `"msg":"request"`) {
		t.Fatalf("no access log on stderr:\n%s", errOut.String())
	}
}

var servingOn = regexp.MustCompile(`serving on (http://[0-9.:\[\]]+)`)

// startServe runs serve in process until the test ends; it returns the
// base URL.
func startServe(t *testing.T, cfg string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli(ctx, append([]string{"--config", cfg, "serve"}, args...), strings.NewReader(""), &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			t.Error("serve did not shut down")
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := servingOn.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d:\n%s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s\n%s", out.String(), errOut.String())
		}
	}
}

// post sends a JSON body (raw bytes, or a value to encode) and returns the
// status and the decoded reply.
func post(t *testing.T, method, url string, body any, hdr ...string) (int, map[string]any) {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		data = b
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if data != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v map[string]any
	_ = json.Unmarshal(raw, &v)
	return resp.StatusCode, v
}

// serve --pprof serves the profiles; without it their paths answer 404.
func TestServePprof(t *testing.T) {
	cfg := serveProject(t, "")
	for _, c := range []struct {
		args []string
		want int
	}{{[]string{"--pprof"}, http.StatusOK}, {nil, http.StatusNotFound}} {
		base := startServe(t, cfg, append([]string{"--addr", "127.0.0.1:0"}, c.args...)...)
		if code, _ := post(t, "GET", base+"/debug/pprof/heap?debug=1", nil); code != c.want {
			t.Fatalf("serve %v: heap profile %d, want %d", c.args, code, c.want)
		}
	}
}

// serve passes [server] body_limit to the server: past it 413, up to it
// read. (With the limit ignored, the 1 MiB default would take both.)
func TestServeUsesBodyLimit(t *testing.T) {
	base := startServe(t, serveProject(t, "body_limit = 1000\n"), "--addr", "127.0.0.1:0")
	body := func(n int) []byte {
		b := []byte(`{"tools":[]}`)
		return append(b, bytes.Repeat([]byte(" "), n-len(b))...)
	}
	if code, v := post(t, "POST", base+"/v1/runs", body(1000)); code != http.StatusCreated {
		t.Fatalf("a body of 1000 bytes: %d %v", code, v)
	}
	if code, v := post(t, "POST", base+"/v1/runs", body(1001)); code != http.StatusRequestEntityTooLarge || v["code"] != "payload_too_large" {
		t.Fatalf("a body of 1001 bytes: %d %v", code, v)
	}
}

// serve tells the server its listen address: on every address (with a
// token) a request may name the host any way; on loopback, only as
// loopback.
func TestServeChecksHostAgainstItsAddress(t *testing.T) {
	cfg := serveProject(t, "token_env = \"AWAKEN_SERVE_TEST_TOKEN\"\n")
	t.Setenv("AWAKEN_SERVE_TEST_TOKEN", "tok")
	open := startServe(t, cfg, "--addr", "0.0.0.0:0")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(open, "http://"))
	if code, v := post(t, "GET", "http://127.0.0.1:"+port+"/readyz", nil, "Host", "sidecar.internal:"+port); code != 200 {
		t.Fatalf("on 0.0.0.0, Host sidecar.internal: %d %v", code, v)
	}
	local := startServe(t, cfg, "--addr", "127.0.0.1:0")
	if code, v := post(t, "GET", local+"/readyz", nil, "Host", "sidecar.internal"); code != http.StatusForbidden || v["code"] != "host_not_allowed" {
		t.Fatalf("on loopback, Host sidecar.internal: %d %v", code, v)
	}
}

// child is `awaken-lua serve` in a process of its own.
type child struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
	errs *syncBuffer
}

func startChild(t *testing.T, cfg string) *child {
	t.Helper()
	args, _ := json.Marshal([]string{"--config", cfg, "serve", "--addr", "127.0.0.1:0", "--log-level", "warn"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(args))
	out := &syncBuffer{}
	c := &child{cmd: cmd, done: make(chan struct{}), errs: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = out, c.errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.kill(t) })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := servingOn.FindStringSubmatch(out.String()); m != nil {
			c.base = m[1]
			return c
		}
		select {
		case <-c.done:
			t.Fatalf("serve exited: %s", c.errs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", c.errs.String())
		}
	}
}

// kill sends SIGKILL: no shutdown, no Close, no last save.
func (c *child) kill(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
		return
	default:
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed serve process did not exit")
	}
}

// markLua writes a thread-scoped key in the middle of a run.
const markLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "mark" }
local seen = p:key("mark.seen", { scope = "thread", reducer = "add", default = 0, schema = { type = "integer" } })
p:on("after_tool_execute", function(ctx) ctx:update(seen, 1) end)
return p
`

// A thread-scoped value written by a call the sidecar acknowledged
// survives kill -9: a new process on the same file store continues the
// run with it, at the same revision, and the thread keeps it once the run
// ends. (Before, the checkpoint kept run-scoped keys only.)
func TestServeKilledKeepsAcknowledgedThreadValues(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"awaken.toml": "plugin_dir = \"scripts\"\n[model]\nscript = \"script.toml\"\n[store]\nkind = \"file\"\npath = \"store\"\n" +
			"[runtime]\nhook_timeout = \"30s\"\n[agents.default]\ntools = []\n",
		"script.toml":      "[[turns]]\ntext = \"hi\"\n",
		"scripts/mark.lua": markLua,
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "awaken.toml")
	must := func(c *child, want int, method, path string, body any) map[string]any {
		t.Helper()
		code, v := post(t, method, c.base+path, body)
		if code != want {
			t.Fatalf("%s %s: %d, want %d: %v", method, path, code, want, v)
		}
		return v
	}
	add := map[string]any{"id": "c1", "name": "add", "args": map[string]any{}}

	a := startChild(t, cfg)
	id := must(a, 201, "POST", "/v1/runs", map[string]any{"thread_id": "keep", "tools": []any{map[string]any{"name": "add"}}})["run_id"].(string)
	p := "/v1/runs/" + id + "/phases/"
	must(a, 200, "POST", p+"step_start", map[string]any{})
	must(a, 200, "POST", p+"before_inference", map[string]any{"request": map[string]any{}})
	must(a, 200, "POST", p+"after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{add}}})
	must(a, 200, "POST", p+"tool_gate", map[string]any{"call": add})
	must(a, 200, "POST", p+"before_tool_execute", map[string]any{"call": add})
	acked := must(a, 200, "POST", p+"after_tool_execute", map[string]any{"call": add, "result": map[string]any{"status": "success", "data": 2}})
	a.kill(t)

	b := startChild(t, cfg)
	got := must(b, 200, "GET", "/v1/runs/"+id, nil)
	if st := got["state"].(map[string]any); st["mark.seen"] != 1.0 || got["revision"] != acked["revision"] {
		t.Fatalf("after kill -9: revision %v (acknowledged %v), state %v", got["revision"], acked["revision"], st)
	}
	must(b, 200, "POST", p+"step_end", map[string]any{})
	must(b, 200, "POST", p+"step_start", map[string]any{})
	must(b, 200, "POST", p+"before_inference", map[string]any{"request": map[string]any{}})
	must(b, 200, "POST", p+"after_inference", map[string]any{"response": map[string]any{"text": "done"}})
	must(b, 200, "POST", p+"step_end", map[string]any{})
	must(b, 200, "POST", p+"run_end", map[string]any{})
	next := must(b, 201, "POST", "/v1/runs", map[string]any{"thread_id": "keep"})["run_id"].(string)
	if st := must(b, 200, "GET", "/v1/runs/"+next, nil)["state"].(map[string]any); st["mark.seen"] != 1.0 {
		t.Fatalf("the thread's next run: %v", st)
	}
}

// A [shadow] that does not load stops serve, and the error is at the
// [shadow] key that is wrong: not at the top-level plugin_dir, whose
// directory is fine, and not silently an empty candidate when plugin_dir
// is left at its default.
func TestServeShadowErrorsAtTheirKey(t *testing.T) {
	const gate = "local awaken = require(\"awaken\")\nlocal p = awaken.plugin {}\np:tool_gate(function() end)\nreturn p\n"
	for _, c := range []struct {
		name, toml string
		files      map[string]string
		want       string
	}{
		{"dir missing, plugin_dir written",
			"plugin_dir = \"scripts\"\n[audit]\npath = \"\"\n\n[shadow]\nplugin_dir = \"candidat\"\n",
			map[string]string{"scripts/gate.lua": gate},
			"awaken.toml:6: config_invalid: shadow.plugin_dir: the candidate's plugin directory "},
		{"dir missing, plugin_dir default",
			"[audit]\npath = \"\"\n[shadow]\nplugin_dir = \"candidat\"\n",
			nil,
			"awaken.toml:4: config_invalid: shadow.plugin_dir: the candidate's plugin directory "},
		{"dir is a file",
			"[audit]\npath = \"\"\n[shadow]\nplugin_dir = \"candidate\"\n",
			map[string]string{"candidate": "not a directory\n"},
			"awaken.toml:4: config_invalid: shadow.plugin_dir: "},
		{"config missing",
			"[audit]\npath = \"\"\n[shadow]\nplugin_dir = \"candidate\"\nconfig = \"candidate.toml\"\n",
			map[string]string{"candidate/gate.lua": gate},
			"awaken.toml:5: config_invalid: shadow.config: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := project(t, c.toml, c.files)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			var out, errOut syncBuffer
			code := cli(ctx, []string{"--config", filepath.Join(dir, "awaken.toml"), "serve", "--addr", "127.0.0.1:0"},
				strings.NewReader(""), &out, &errOut)
			if code != exitUsage || !strings.Contains(errOut.String(), c.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s%s", code, exitUsage, c.want, out.String(), errOut.String())
			}
		})
	}
}
