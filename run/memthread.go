package run

import (
	"container/list"
	"encoding/json"
	"math"

	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// memThread is a stored thread and its place in the LRU list, nil while
// the thread is pinned (waiting, or with a saved run).
//
// Its values, messages and aside values are kept as JSON, as the file store
// keeps them: bytes hold no pointers, so the collector does not trace the
// thousands of threads a busy sidecar keeps at each of its cycles (how long
// a cycle marks is what the slowest replies wait: see server/README.md,
// "Performance"), and encoding on the way in and decoding on the way out is
// the deep copy that keeps callers off the store's maps. A thread that
// cannot be written as JSON that encoding/json reads back (nested deeper
// than 10000 levels in all, or holding values that are not canonical, which
// only a Go caller can pass) is kept as a deep copy instead: t holds it all
// and body is nil.
type memThread struct {
	t    Thread // ID, Waiting, SavedBy, Revision; the rest when body is nil
	body []byte // threadBody as JSON
	elem *list.Element
}

// threadBody is the part of a thread a memThread keeps encoded.
type threadBody struct {
	Values   map[string]any  `json:"values"`
	Messages []model.Message `json:"messages"`
	Aside    map[string]any  `json:"aside"`
}

// keepThread makes what the store keeps of t.
func keepThread(t Thread) memThread {
	body, err := appendThreadBody(nil, t)
	if err != nil {
		return memThread{t: cloneThread(t)}
	}
	t.Values, t.Messages, t.Aside = nil, nil, nil
	return memThread{t: t, body: body}
}

// thread returns a copy of the stored thread.
func (mt *memThread) thread() (Thread, error) {
	if mt.body == nil {
		return cloneThread(mt.t), nil
	}
	var b threadBody
	if err := json.Unmarshal(mt.body, &b); err != nil {
		return Thread{}, err
	}
	t := mt.t
	t.Values, t.Messages, t.Aside = b.Values, b.Messages, b.Aside
	return t, nil
}

// appendThreadBody appends the bytes json.Marshal writes for t's
// threadBody, without reflection: a sidecar saves a thread at the end of
// each run, and encoding/json took twice as long as the copy it replaces.
// TestThreadBodyMatchesEncodingJSON holds it to json.Marshal, field by
// field of model.Message and model.ToolCall.
func appendThreadBody(b []byte, t Thread) ([]byte, error) {
	var err error
	if b == nil {
		b = make([]byte, 0, bodySize(t))
	}
	b = append(b, `{"values":`...)
	if b, err = value.AppendJSONNested(b, t.Values, 1); err != nil { // in the body object
		return b, err
	}
	b = append(b, `,"messages":`...)
	if t.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, m := range t.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendMessage(b, m); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"aside":`...)
	if b, err = value.AppendJSONNested(b, t.Aside, 1); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// bodySize is the length appendThreadBody writes for t, measured without
// writing it, so that the store keeps no spare capacity; 0 when a value
// cannot be encoded (appendThreadBody fails then).
func bodySize(t Thread) int {
	n := len(`{"values":,"messages":,"aside":}`)
	for _, v := range []map[string]any{t.Values, t.Aside} {
		vs, err := value.EncodedSize(v, math.MaxInt)
		if err != nil {
			return 0
		}
		n += vs
	}
	if t.Messages == nil {
		return n + len("null")
	}
	n += len("[]") + max(len(t.Messages)-1, 0)
	for _, m := range t.Messages {
		n += len(`{"role":,"content":}`) + value.StringSize(m.Role) + value.StringSize(m.Content)
		if len(m.ToolCalls) > 0 {
			n += len(`,"tool_calls":[]`) + len(m.ToolCalls) - 1
			for _, c := range m.ToolCalls {
				as, err := value.EncodedSize(c.Args, math.MaxInt)
				if err != nil {
					return 0
				}
				n += len(`{"id":,"name":,"args":}`) + value.StringSize(c.ID) + value.StringSize(c.Name) + as
			}
		}
		if m.ToolCallID != "" {
			n += len(`,"tool_call_id":`) + value.StringSize(m.ToolCallID)
		}
	}
	return n
}

func appendMessage(b []byte, m model.Message) ([]byte, error) {
	b = append(b, `{"role":`...)
	b = value.AppendString(b, m.Role)
	b = append(b, `,"content":`...)
	b = value.AppendString(b, m.Content)
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = value.AppendString(b, c.ID)
			b = append(b, `,"name":`...)
			b = value.AppendString(b, c.Name)
			b = append(b, `,"args":`...)
			var err error
			// In the body, messages, the message, tool_calls and the call.
			if b, err = value.AppendJSONNested(b, c.Args, 5); err != nil {
				return b, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = value.AppendString(b, m.ToolCallID)
	}
	return append(b, '}'), nil
}
