package main

import (
	"context"
	"io"
	"net/http"
	"os"
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
