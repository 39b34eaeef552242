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
// not keep its run locked for ever: the reply is written holding the run,
// and other calls on it (and the janitor's expiries) wait for that lock.
func TestSlowReaderHoldsNoRun(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog(), BodyLimit: 32 << 20, BodyTimeout: 3 * time.Second})
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
	deadline := time.Now().Add(60 * time.Second)
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
