package event_test

import (
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/event"
)

type only struct {
	typ string
	got []event.Event
}

func (o *only) Emit(ev event.Event)   { o.got = append(o.got, ev) }
func (o *only) Wants(typ string) bool { return typ == o.typ }

func TestWants(t *testing.T) {
	typ := event.InferenceComplete{}.Type()
	if event.Wants(event.Discard{}, typ) {
		t.Error("Discard wants nothing")
	}
	if !event.Wants(&event.Recorder{}, typ) {
		t.Error("a plain sink wants every event")
	}
	o := &only{typ: typ}
	if !event.Wants(o, typ) || event.Wants(o, event.StepStart{}.Type()) {
		t.Error("a Selective sink says what it wants")
	}
}
