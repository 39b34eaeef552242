package gate_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/gate"
)

func TestTicketFromValue(t *testing.T) {
	full := map[string]any{"id": "t1", "action": "approve", "message": "deploy?", "parameters": map[string]any{"env": "prod"},
		"response_schema": map[string]any{"type": "string"}, "options": []any{"yes", "no"}, "resume_mode": "replay",
		"timeout": "10m", "on_timeout": "resume"}
	got, err := gate.TicketFromValue(full)
	want := gate.Ticket{ID: "t1", Action: "approve", Message: "deploy?", Parameters: map[string]any{"env": "prod"},
		ResponseSchema: map[string]any{"type": "string"}, Options: []string{"yes", "no"}, ResumeMode: gate.Replay,
		Timeout: 10 * time.Minute, OnTimeout: gate.OnTimeoutResume}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("full ticket: %+v %v", got, err)
	}
	if got, err := gate.TicketFromValue(nil); err != nil || !reflect.DeepEqual(got, gate.Ticket{}) {
		t.Fatalf("nil: %+v %v", got, err)
	}
	// A value that is not an object is no ticket (a tool's pending data).
	for _, v := range []any{1.0, "x", []any{1.0}, true} {
		if _, err := gate.TicketFromValue(v); err == nil || !strings.Contains(err.Error(), "a ticket is an object of fields") {
			t.Errorf("%v: %v, want an error", v, err)
		}
	}
	for _, tc := range []struct {
		v    map[string]any
		want string
	}{
		{map[string]any{"call_id": "c1"}, `unknown ticket field "call_id"`},
		{map[string]any{"message": 3.0}, "ticket field message must be a string"},
		{map[string]any{"resume_mode": "sideways"}, `resume_mode "sideways" is not one of`},
		{map[string]any{"timeout": "soon"}, "ticket timeout must be a positive duration"},
		{map[string]any{"timeout": "-1m"}, "ticket timeout must be a positive duration"},
		{map[string]any{"timeout": "1000h"}, "is more than"},
		{map[string]any{"on_timeout": "explode"}, `on_timeout "explode" is not`},
		{map[string]any{"options": []any{"yes", 2.0}}, "ticket options must be strings"},
		{map[string]any{"options": "yes"}, "ticket options must be a list of strings"},
	} {
		if _, err := gate.TicketFromValue(tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.v, err, tc.want)
		}
	}
}

// FuzzTicketFromValue: any JSON value reads as a ticket or an error, and
// a ticket read back from its own value (with its timeout) is the same.
func FuzzTicketFromValue(f *testing.F) {
	f.Add(`{"id":"t1","message":"ok?","options":["a"],"timeout":"5m","on_timeout":"cancel","resume_mode":"use_decision_as_result"}`)
	f.Add(`{"parameters":{"a":[1,2]},"response_schema":null}`)
	f.Add(`{"timeout":3}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, src string) {
		var v any
		if json.Unmarshal([]byte(src), &v) != nil {
			return
		}
		tk, err := gate.TicketFromValue(v)
		if err != nil {
			return
		}
		m := tk.Value()
		if tk.Timeout > 0 {
			m["timeout"] = tk.Timeout.String()
		}
		again, err := gate.TicketFromValue(m)
		if err != nil {
			t.Fatalf("%s: its own value does not read back: %v", src, err)
		}
		if again.Timeout != tk.Timeout || again.ID != tk.ID || again.Message != tk.Message || again.ResumeMode != tk.ResumeMode ||
			again.OnTimeout != tk.OnTimeout || !reflect.DeepEqual(again.Options, tk.Options) {
			t.Fatalf("%s: %+v read back as %+v", src, tk, again)
		}
	})
}
