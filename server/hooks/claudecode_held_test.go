package hooks

import (
	"testing"

	"github.com/awaken-lua/awaken-lua/run"
)

// heldRun is a Run that only has an id.
type heldRun string

func (r heldRun) ID() string            { return string(r) }
func (r heldRun) Session() *run.Session { return nil }
func (r heldRun) Done() bool            { return false }

// A session's held runs live in heldBuf while they fit; past it they move
// to the heap and heldBuf lets go of them.
func TestHeldRunsSpill(t *testing.T) {
	cs := &ccSession{}
	cs.held = cs.heldBuf[:0]
	cs.hold(heldRun("a"))
	cs.hold(heldRun("b"))
	if &cs.held[0] != &cs.heldBuf[0] {
		t.Fatal("two held runs left heldBuf")
	}
	cs.hold(heldRun("c"))
	if len(cs.held) != 3 || cs.held[0] != heldRun("a") || cs.held[2] != heldRun("c") {
		t.Fatalf("held %v", cs.held)
	}
	if cs.heldBuf != [2]Run{} {
		t.Fatalf("heldBuf still holds %v after the runs moved", cs.heldBuf)
	}
}
