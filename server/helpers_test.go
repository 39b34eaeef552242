package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/host"
)

// policyLua is the test plugin: a gate with every decision, a run counter,
// a thread counter, a context message, a result transform and a stop. It
// needs nothing from stdlib/.
const policyLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "policy", description = "the sidecar tests' policy" }

local calls = p:key("policy.calls", { scope = "run", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" } })
local visits = p:key("policy.visits", { scope = "thread", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" } })
local tools = p:key("policy.tools", { scope = "run", reducer = "append", default = {} })

p:on("run_start", function(ctx) ctx:update(visits, 1) end)

p:tool_gate(function(ctx, call)
  if call.name == "shell" and tostring(call.args.cmd):find("rm", 1, true) then
    return awaken.block("rm is not allowed")
  end
  if call.name == "deploy" and not call.resume then
    return awaken.suspend { message = "deploy to production?", options = { "yes", "no" } }
  end
  if call.name == "fs_read" and call.args.path == ".env" then
    return awaken.set_result(awaken.error("secrets are off limits"))
  end
  if call.name == "ls" and not call.args.safe then
    return awaken.rewrite({ dir = call.args.dir, safe = true })
  end
end)

p:on("after_tool_execute", function(ctx)
  ctx:update(calls, 1)
  ctx:update(tools, ctx.tool.name .. ":" .. ctx.tool.result.status)
  if ctx.tool.name == "add" then
    ctx:schedule("runtime.add_context_message",
      { key = "policy.note", content = "Double-check the sum.", target = "system", kind = "ephemeral" })
  end
end)

p:on("before_inference", function(ctx)
  for _, m in ipairs(ctx.messages) do
    if m.role == "user" and m.content:find("remind me", 1, true) then
      ctx:schedule("runtime.add_context_message",
        { key = "policy.reminder", content = "Reminder: tests first.", target = "system", kind = "ephemeral" })
    end
  end
end)

p:result_transform(function(call, result)
  if type(result.data) == "string" then
    result.data = result.data:gsub("SECRET", "[redacted]")
  end
  return result
end)

p:on("step_start", function(ctx)
  if ctx.run.thread_id == "boom" then error("the boom thread explodes") end
end)

p:on("step_end", function(ctx)
  if ctx:get(calls) >= 6 then ctx:stop("too_busy", "six tool calls") end
end)

return p
`

// The hook deadline is wall-clock time; under -race with many runs on 2
// cores a hook may wait past the default 100ms for a core. No test here is
// about deadlines (luabridge's hostile tests are).
const testToml = `plugin_dir = "scripts"

[runtime]
hook_timeout = "30s"

[model]
kind = "scripted"
script = "script.toml"

[agents.default]
tools = []
max_steps = 8

[agents.short]
tools = []
max_steps = 2

[agents.prompted]
tools = []
system_prompt = "You are terse."
`

// project writes awaken.toml (plus extra TOML), the script and plugins into
// a temp dir and returns it.
func project(t testing.TB, extraToml string, plugins map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "awaken.toml"), testToml+extraToml)
	writeFile(t, filepath.Join(dir, "script.toml"), "[[turns]]\ntext = \"done\"\n")
	if plugins == nil {
		plugins = map[string]string{"policy.lua": policyLua}
	}
	for name, src := range plugins {
		writeFile(t, filepath.Join(dir, "scripts", name), src)
	}
	return dir
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func openHost(t testing.TB, dir string) *host.Host {
	t.Helper()
	h, err := host.Open(context.Background(), host.Options{ConfigPath: filepath.Join(dir, "awaken.toml")})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// sidecar is a server on a real loopback listener.
type sidecar struct {
	t     testing.TB
	h     *host.Host
	srv   *Server
	ts    *httptest.Server
	token string
}

func newSidecar(t testing.TB, dir string, o Options) *sidecar {
	t.Helper()
	h := openHost(t, dir)
	srv := New(h, o)
	ts := httptest.NewServer(srv)
	sc := &sidecar{t: t, h: h, srv: srv, ts: ts, token: o.Token}
	t.Cleanup(sc.close)
	return sc
}

func (sc *sidecar) close() {
	if sc.ts == nil {
		return
	}
	sc.ts.Close()
	sc.srv.Close()
	sc.h.Close()
	// testing keeps cleanup closures reachable after running them, and a
	// benchmark makes a sidecar per round: let this one's runs go.
	sc.ts, sc.srv, sc.h = nil, nil, nil
}

// reply is a decoded HTTP reply.
type reply struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (r reply) str(key string) string { s, _ := r.body[key].(string); return s }
func (r reply) num(key string) float64 {
	n, _ := r.body[key].(float64)
	return n
}

// call sends a request; body may be nil, a string, []byte or a value to
// encode.
func (sc *sidecar) call(method, path string, body any, hdr ...string) reply {
	sc.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			sc.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, sc.ts.URL+path, rd)
	if err != nil {
		sc.t.Fatal(err)
	}
	if sc.token != "" {
		req.Header.Set("Authorization", "Bearer "+sc.token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := sc.ts.Client().Do(req)
	if err != nil {
		sc.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(bytes.TrimSpace(raw)) > 0 && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			sc.t.Fatalf("%s %s: reply is not a JSON object: %v\n%s", method, path, err, raw)
		}
	}
	return r
}

// must calls and fails the test unless the status is want.
func (sc *sidecar) must(want int, method, path string, body any, hdr ...string) reply {
	sc.t.Helper()
	r := sc.call(method, path, body, hdr...)
	if r.status != want {
		sc.t.Fatalf("%s %s: status %d, want %d\n%s", method, path, r.status, want, r.raw)
	}
	return r
}

func (sc *sidecar) phase(id, name string, body any) reply {
	sc.t.Helper()
	return sc.must(http.StatusOK, "POST", "/v1/runs/"+id+"/phases/"+name, body)
}

// startRun creates a run and returns its id.
func (sc *sidecar) startRun(body any) string {
	sc.t.Helper()
	r := sc.must(http.StatusCreated, "POST", "/v1/runs", body)
	return r.str("run_id")
}

func call(id, name string, args map[string]any) map[string]any {
	if args == nil {
		args = map[string]any{}
	}
	return map[string]any{"id": id, "name": name, "args": args}
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// problemOK checks the problem+json shape of an error reply.
func problemOK(t testing.TB, r reply, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d\n%s", r.status, status, r.raw)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q, want application/problem+json\n%s", ct, r.raw)
	}
	for _, k := range []string{"type", "title", "detail", "code"} {
		if r.str(k) == "" {
			t.Fatalf("problem lacks %q: %s", k, r.raw)
		}
	}
	if int(r.num("status")) != status || r.str("code") != code {
		t.Fatalf("problem status %v code %q, want %d %q\n%s", r.body["status"], r.str("code"), status, code, r.raw)
	}
	if r.header.Get(GenerationHeader) == "" {
		t.Fatalf("no %s header on %s", GenerationHeader, r.raw)
	}
}
