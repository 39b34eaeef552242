package engine

import (
	"reflect"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// A queued action and a dead letter read back from the plain values state
// keeps (after a checkpoint's JSON round trip too); anything else is not
// one.
func TestQueueValuesRoundTrip(t *testing.T) {
	a := QueuedAction{ID: "a3.0", Key: "runtime.continue", Phase: phase.StepEnd, Payload: map[string]any{"content": "go on"}, Plugin: "verify"}
	v, err := value.Normalize(a.Value())
	if err != nil {
		t.Fatal(err)
	}
	if back, ok := queuedAction(v); !ok || !reflect.DeepEqual(back, a) {
		t.Fatalf("queued action: %+v %v", back, ok)
	}
	d := DeadLetter{ID: "a3.1", Key: "x.y", Payload: 42.0, Error: "hook_failed: boom"}
	if back, ok := deadLetter(d.Value()); !ok || !reflect.DeepEqual(back, d) {
		t.Fatalf("dead letter: %+v %v", back, ok)
	}
	for _, bad := range []any{nil, "a", map[string]any{"id": "x", "phase": "not_a_phase"}} {
		if _, ok := queuedAction(bad); ok {
			t.Errorf("queuedAction(%v) accepted", bad)
		}
	}
}
