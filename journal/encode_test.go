package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/model"
)

// The fast encoder writes what encoding/json would read back as the same
// record.
func TestAppendRecordRoundTrips(t *testing.T) {
	temp := 0.5
	now := time.Date(2026, 11, 24, 1, 2, 3, 456789, time.UTC)
	recs := []*Record{
		{Rec: KindRun, Format: Format, RunID: "r\"1", ThreadID: "t", Agent: "a", Generation: &Generation{ID: "g1", Hash: "h"},
			Plugins: []string{"p", "q"}, TS: now},
		{Rec: KindPhase, RunID: "r", Phase: RunStart, Input: &Input{Now: now, Cwd: "/home/u/p \"q\"",
			Messages: []model.Message{{Role: "user", Content: "hi\n\t\"<&>\u2028\x01 é \xff"}, {Role: "assistant", ToolCalls: []model.ToolCall{{ID: "c", Name: "n", Args: map[string]any{}}}}, {Role: "tool", ToolCallID: "c", Content: "x"}},
			Thread:   &Thread{Values: map[string]any{"k": []any{1.5, float64(2), nil, true, "s", map[string]any{"n": -3e20}}}},
			Tools:    []model.ToolSpec{{Name: "fs_read", Parameters: map[string]any{"type": "object"}}}}},
		{Rec: KindPhase, RunID: "r", Phase: BeforeInference, Step: 2, Input: &Input{HostTools: true, Params: &model.Params{Temperature: &temp}},
			Context: []Context{{Key: "k", Target: "system", Role: "system", Content: "c"}}, Request: &Request{Tools: []string{"a"}}},
		{Rec: KindPhase, RunID: "r", Phase: AfterInference, Input: &Input{Response: &model.Response{Text: "t", Usage: &model.Usage{TotalTokens: 3}}}},
		{Rec: KindPhase, RunID: "r", Phase: ToolGate, Input: &Input{Call: &model.ToolCall{ID: "c", Name: "shell", Args: map[string]any{"cmd": "rm"}}},
			Decisions:   []Decision{{CallID: "c", Tool: "shell", Decision: gate.Block, Plugin: "p", Reason: "no", Args: map[string]any{"x": 1.0}}},
			Termination: "blocked:no", Failed: "oops", Masked: []string{"call.args.password"}, Omitted: []string{"input"}},
		{Rec: KindPhase, RunID: "r", Phase: AfterToolExecute, Input: &Input{Call: &model.ToolCall{ID: "c", Name: "n"}, Result: &model.ToolResult{Status: "success", Data: map[string]any{"a": "b"}, Message: "m"}}},
		{Rec: KindPhase, RunID: "r", Phase: Resume, Input: &Input{Resume: []gate.Resume{{Target: "c", Action: "resume", Result: "yes", Reason: "r"}}, Reason: "why"}, Continued: 2,
			Expired: []string{"c2"}},
		{Rec: KindEnd, RunID: "r", Termination: "natural", Steps: 3, TS: now},
		{Rec: KindShadow, RunID: "r", Shadow: &Flip{Kind: "allow->block", RunID: "r", From: "a", To: "b"}},
		{Rec: KindLost, Lost: []LostRun{{RunID: "r", Rec: KindPhase, Save: 3}, {RunID: "s", Rec: KindRun}}},
	}
	for i, r := range recs {
		fast := appendRecord(nil, r)
		slow, _ := json.Marshal(r)
		var a, b Record
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("record %d: the fast encoding is not JSON: %v\n%s", i, err, fast)
		}
		json.Unmarshal(slow, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("record %d differs:\nfast %s\nslow %s", i, fast, slow)
		}
	}
}

// Read and Verify take any bytes without panicking, and report rather
// than accept what is not a journal.
func FuzzRead(f *testing.F) {
	f.Add([]byte("{\"rec\":\"run\",\"format\":1,\"run_id\":\"r\"}\n"))
	f.Add([]byte(`{"prev":"","sum":"00","rec":"phase"}` + "\n{"))
	f.Add(seal("", []byte(`{"rec":"end","run_id":"r"}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "journal-x.ndjson")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		Read([]string{dir}, func(Pos, *Record) error { return nil })
		Verify([]string{dir})
	})
}
