package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/model"
)

// TestSlowReaderHoldsNoRun: a client that never reads a large reply must
// not hold up its run: other calls on it (and the janitor's expiries) would
// wait for it. The reply is written once the run is unlocked, so the next
// call goes on at once, however long the reply's write deadline
// (BodyTimeout per MiB) lets the slow client take.
func TestSlowReaderHoldsNoRun(t *testing.T) {
	for _, timeout := range []time.Duration{3 * time.Second, time.Hour} {
		t.Run(timeout.String(), func(t *testing.T) { slowReaderHoldsNoRun(t, timeout) })
	}
}

func slowReaderHoldsNoRun(t *testing.T, bodyTimeout time.Duration) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog(), BodyLimit: 32 << 20, BodyTimeout: bodyTimeout})
	id := sc.startRun(map[string]any{})
	sc.phase(id, "step_start", map[string]any{})
	// A reply larger than what the loopback socket buffers hold.
	big := strings.Repeat("x", 1<<20)
	msgs := make([]model.Message, 12)
	for i := range msgs {
		msgs[i] = model.Message{Role: "user", Content: big}
	}
	body, err := json.Marshal(map[string]any{"request": map[string]any{"messages": msgs}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", sc.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096) // and never read
	}
	fmt.Fprintf(conn, "POST /v1/runs/%s/phases/before_inference HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", id, len(body))
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	// after_inference is out of order (409) until before_inference ran,
	// and then waits on the run while that reply is being written.
	next := `{"response":{"text":"done"}}`
	deadline := time.Now().Add(30 * time.Second)
	for {
		client := &http.Client{Timeout: time.Until(deadline)}
		resp, err := client.Post(sc.ts.URL+"/v1/runs/"+id+"/phases/after_inference", "application/json", strings.NewReader(next))
		if err != nil {
			t.Fatalf("after_inference still waits on a run whose reply its client never reads: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		if resp.StatusCode != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("after_inference: %d %s", resp.StatusCode, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A client that never reads a run's large GET reply holds up no call on
// the run either.
func TestSlowReaderOfARunHoldsNoRun(t *testing.T) {
	const bigLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "big" }
local ks = {}
for i = 1, 8 do ks[i] = p:key("big.k" .. i, { schema = { type = "string" }, default = "" }) end
p:on("run_start", function(ctx)
  for i = 1, 8 do ctx:update(ks[i], string.rep("x", 900000)) end
end)
return p
`
	sc := newSidecar(t, project(t, "", map[string]string{"big.lua": bigLua}), Options{Log: quietLog(), BodyTimeout: time.Hour})
	id := sc.startRun(map[string]any{})
	conn, err := net.Dial("tcp", sc.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096) // and never read
	}
	fmt.Fprintf(conn, "GET /v1/runs/%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", id)
	// Its reply is being written once its first byte is here; the rest
	// (8 values of 900 KB) is more than the sockets hold.
	deadline := time.Now().Add(30 * time.Second)
	for one := make([]byte, 1); ; {
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if n, _ := conn.Read(one); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the GET's reply never started")
		}
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post(sc.ts.URL+"/v1/runs/"+id+"/phases/step_start", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("step_start still waits on a run whose GET reply its client never reads: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("step_start: %d %s", resp.StatusCode, b)
	}
}
