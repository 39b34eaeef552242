package journal

import (
	"sync"

	"github.com/awaken-lua/awaken-lua/model"
)

// Slot is a phase record with room for the values its input points to, so
// recording a phase costs one allocation, or none when a Writer hands out
// the slot and recycles it once the record is written.
type Slot struct {
	Rec    Record
	In     Input
	call   model.ToolCall
	result model.ToolResult
	resp   model.Response
	dec    [1]Decision
	pool   *sync.Pool
}

// Slots is a recorder that hands out slots it recycles (Writer).
type Slots interface {
	Slot() *Slot
}

// NewSlot makes a slot nobody recycles.
func NewSlot() *Slot {
	sl := new(Slot)
	sl.Rec.Input = &sl.In
	return sl
}

// SetCall sets the input's call.
func (sl *Slot) SetCall(c model.ToolCall) {
	sl.call = c
	sl.In.Call = &sl.call
}

// SetResult sets the input's tool result.
func (sl *Slot) SetResult(r model.ToolResult) {
	sl.result = r
	sl.In.Result = &sl.result
}

// SetResponse sets the input's model response.
func (sl *Slot) SetResponse(r model.Response) {
	sl.resp = r
	sl.In.Response = &sl.resp
}

// SetDecision sets the record's one gate decision.
func (sl *Slot) SetDecision(d Decision) {
	sl.dec[0] = d
	sl.Rec.Decisions = sl.dec[:]
}

// Slot hands out a slot the writer recycles after writing its record.
func (w *Writer) Slot() *Slot {
	sl, _ := w.slots.Get().(*Slot)
	if sl == nil {
		sl = new(Slot)
	}
	sl.pool = &w.slots
	sl.Rec.Input = &sl.In
	sl.Rec.slot = sl
	return sl
}

// recycle returns a written record's slot to its writer.
func recycle(rec *Record) {
	sl := rec.slot
	if sl == nil || sl.pool == nil {
		return
	}
	pool := sl.pool
	*sl = Slot{}
	pool.Put(sl)
}

// Detach returns a record that stays valid after rec's slot is recycled:
// rec itself when it owns its values, else a copy of what the slot holds.
// A recorder that keeps a record past Record (a shadow's queue) detaches
// it first.
func Detach(rec *Record) *Record {
	if rec.slot == nil {
		return rec
	}
	cp := *rec
	cp.slot = nil
	if rec.Input != nil {
		in := *rec.Input
		if in.Call != nil {
			c := *in.Call
			in.Call = &c
		}
		if in.Result != nil {
			r := *in.Result
			in.Result = &r
		}
		if in.Response != nil {
			r := *in.Response
			in.Response = &r
		}
		cp.Input = &in
	}
	cp.Decisions = append([]Decision(nil), rec.Decisions...)
	return &cp
}
