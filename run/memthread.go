package run

import (
	"container/list"
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// The memory store keeps each thread's values, aside and messages as one
// pointer-free []byte (its body) in the private binary form below, not as
// maps: a sidecar's store holds thousands of threads, and the collector
// traces every map and boxed value of a copy on each cycle, where a byte
// slice costs it nothing (docs/design.md, "Stores"). The body is also the
// copy that keeps callers off the store's data.
//
// A thread reads back as the deep copy the store kept before did (cloneThread),
// which JSON would not: strings are bytes (valid UTF-8 or not), value.Null
// stays Null, a float64 keeps its bits (-0, NaN), nil and empty stay apart
// for the thread's values and aside, its messages, a message's calls and a
// call's args, and a nil list or map inside a value comes back empty, as
// value.Clone makes it. A thread holding a value that is not canonical is
// kept as a copy instead.

// Value tags.
const (
	tagNil       byte = iota // nil
	tagNull                  // value.Null
	tagFalse                 // false
	tagTrue                  // true
	tagFloat                 // float64: 8 bytes, IEEE 754 bits, little endian
	tagString                // uvarint length, bytes
	tagList                  // []any, nil or not: uvarint length, the elements
	tagObject                // map[string]any, nil or not: uvarint length, then key (uvarint length, bytes) and value pairs
	tagNilObject             // a nil values, aside or args map (at the top, where nil is kept)
)

// memThread is a stored thread and its place in the LRU list, nil while
// the thread is pinned (waiting, or with a saved run). With a body, t
// holds only the thread's id, waiting run, saver and revision.
type memThread struct {
	t    Thread
	body []byte // values, aside and messages; nil: they are in t, copied
	elem *list.Element
}

// keepThread is what the store keeps of t: its body, or a copy when t
// holds a value the body cannot.
func keepThread(t Thread) memThread {
	n, ok := threadBodySize(t)
	if !ok {
		return memThread{t: cloneThread(t)}
	}
	body := appendThreadBody(make([]byte, 0, n), t)
	t.Values, t.Aside, t.Messages = nil, nil, nil
	return memThread{t: t, body: body}
}

// thread returns a copy of the kept thread.
func (mt *memThread) thread() (Thread, error) {
	if mt.body == nil {
		return cloneThread(mt.t), nil
	}
	t := mt.t
	// The strings read are views of the body, not copies: a body is never
	// written once made (PutThread replaces it), so they cannot change,
	// and the thread read keeps its body alive as long as it needs.
	r := bodyReader{b: mt.body, s: unsafe.String(unsafe.SliceData(mt.body), len(mt.body))}
	t.Values = r.object()
	t.Aside = r.object()
	t.Messages = r.messages()
	if r.err == nil && r.i != len(r.s) {
		r.fail("%d bytes after the messages", len(r.s)-r.i)
	}
	if r.err != nil {
		// Only a bug gets here: the store wrote the body itself.
		return Thread{}, fmt.Errorf("memory store: thread %q does not read back (a bug): %w", t.ID, r.err)
	}
	return t, nil
}

// threadBodySize is the length of t's body, and false when t holds a
// value the body cannot.
func threadBodySize(t Thread) (int, bool) {
	n, ok := objectSize(t.Values)
	if !ok {
		return 0, false
	}
	a, ok := objectSize(t.Aside)
	if !ok {
		return 0, false
	}
	n += a
	if t.Messages == nil {
		return n + 1, true
	}
	n += uvarintLen(len(t.Messages) + 1)
	for _, m := range t.Messages {
		n += stringSize(m.Role) + stringSize(m.Content) + stringSize(m.ToolCallID)
		if m.ToolCalls == nil {
			n++
			continue
		}
		n += uvarintLen(len(m.ToolCalls) + 1)
		for _, c := range m.ToolCalls {
			a, ok := objectSize(c.Args)
			if !ok {
				return 0, false
			}
			n += stringSize(c.ID) + stringSize(c.Name) + a
		}
	}
	return n, true
}

// appendThreadBody appends t's body, which threadBodySize accepted.
func appendThreadBody(b []byte, t Thread) []byte {
	b = appendObject(b, t.Values)
	b = appendObject(b, t.Aside)
	if t.Messages == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(t.Messages)+1))
	for _, m := range t.Messages {
		b = appendString(b, m.Role)
		b = appendString(b, m.Content)
		b = appendString(b, m.ToolCallID)
		if m.ToolCalls == nil {
			b = append(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(m.ToolCalls)+1))
		for _, c := range m.ToolCalls {
			b = appendString(b, c.ID)
			b = appendString(b, c.Name)
			b = appendObject(b, c.Args)
		}
	}
	return b
}

// objectSize is the encoded length of a thread's values, aside or a
// call's args, where nil is kept.
func objectSize(m map[string]any) (int, bool) {
	if m == nil {
		return 1, true
	}
	return valueSize(m)
}

// appendObject appends m, which objectSize accepted.
func appendObject(b []byte, m map[string]any) []byte {
	if m == nil {
		return append(b, tagNilObject)
	}
	return appendValue(b, m)
}

// valueSize is the encoded length of v, and false when v is not a
// canonical value (package value).
func valueSize(v any) (int, bool) {
	switch x := v.(type) {
	case nil, value.Null, bool:
		return 1, true
	case float64:
		return 9, true
	case string:
		return 1 + stringSize(x), true
	case []any:
		n := 1 + uvarintLen(len(x))
		for _, e := range x {
			s, ok := valueSize(e)
			if !ok {
				return 0, false
			}
			n += s
		}
		return n, true
	case map[string]any:
		n := 1 + uvarintLen(len(x))
		for k, e := range x {
			s, ok := valueSize(e)
			if !ok {
				return 0, false
			}
			n += stringSize(k) + s
		}
		return n, true
	}
	return 0, false
}

// appendValue appends v, which valueSize accepted.
func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, tagNil)
	case value.Null:
		return append(b, tagNull)
	case bool:
		if x {
			return append(b, tagTrue)
		}
		return append(b, tagFalse)
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, tagFloat), math.Float64bits(x))
	case string:
		return appendString(append(b, tagString), x)
	case []any:
		b = binary.AppendUvarint(append(b, tagList), uint64(len(x)))
		for _, e := range x {
			b = appendValue(b, e)
		}
		return b
	case map[string]any:
		b = binary.AppendUvarint(append(b, tagObject), uint64(len(x)))
		for k, e := range x {
			b = appendValue(appendString(b, k), e)
		}
		return b
	}
	panic(fmt.Sprintf("run: appendValue of %T, which valueSize refuses", v))
}

func stringSize(s string) int { return uvarintLen(len(s)) + len(s) }

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func uvarintLen(n int) int {
	l := 1
	for n >= 0x80 {
		n >>= 7
		l++
	}
	return l
}

// bodyReader reads a body; after the first error every read returns a
// zero value.
type bodyReader struct {
	b   []byte
	s   string // b, for the strings read
	i   int
	err error
	// claimed counts the elements of the lists, maps, messages and calls
	// read so far. Each takes a byte at least, so a body claims no more
	// than its length, and reading a bad one allocates no more than a
	// good one of its size would.
	claimed int
}

// claim reserves n elements, failing past the body's length.
func (r *bodyReader) claim(n int) int {
	if r.err != nil {
		return 0
	}
	if r.claimed += n; r.claimed > len(r.s) {
		r.fail("%d elements claimed in a body of %d bytes", r.claimed, len(r.s))
		return 0
	}
	return n
}

func (r *bodyReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: "+format, append([]any{r.i}, args...)...)
	}
}

func (r *bodyReader) byte() byte {
	if r.err != nil || r.i >= len(r.s) {
		r.fail("unexpected end")
		return 0
	}
	c := r.s[r.i]
	r.i++
	return c
}

// count reads a length no larger than the bytes left, since every
// element takes at least one.
func (r *bodyReader) count() int { return r.countPlus(0) }

// countPlus reads a uvarint that is a length plus extra (a message count
// is its length plus one, so that 0 is nil).
func (r *bodyReader) countPlus(extra uint64) int {
	if r.err != nil {
		return 0
	}
	n, k := binary.Uvarint(r.b[r.i:])
	switch {
	case k == 0:
		r.fail("unexpected end")
		return 0
	case k < 0:
		r.fail("length too long")
		return 0
	}
	r.i += k
	if n > uint64(len(r.s)-r.i)+extra {
		r.fail("length %d past the end", n)
		return 0
	}
	return int(n)
}

func (r *bodyReader) str() string {
	n := r.count()
	if r.err != nil {
		return ""
	}
	s := r.s[r.i : r.i+n]
	r.i += n
	return s
}

func (r *bodyReader) value() any {
	switch tag := r.byte(); tag {
	case tagNil:
		return nil
	case tagNull:
		return value.Null{}
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagFloat:
		if len(r.s)-r.i < 8 {
			r.fail("unexpected end")
			return nil
		}
		u := binary.LittleEndian.Uint64(r.b[r.i:])
		r.i += 8
		return math.Float64frombits(u)
	case tagString:
		return r.str()
	case tagList:
		l := make([]any, r.claim(r.count()))
		for k := range l {
			l[k] = r.value()
		}
		return l
	case tagObject:
		return r.entries()
	default:
		r.fail("tag %d", tag)
		return nil
	}
}

// object reads a thread's values or aside, or a call's args.
func (r *bodyReader) object() map[string]any {
	switch tag := r.byte(); tag {
	case tagNilObject:
		return nil
	case tagObject:
		return r.entries()
	default:
		r.fail("tag %d where an object goes", tag)
		return nil
	}
}

// entries reads a map's length and entries, after its tag.
func (r *bodyReader) entries() map[string]any {
	n := r.claim(r.count())
	m := make(map[string]any, n)
	for range n {
		k := r.str()
		m[k] = r.value()
	}
	return m
}

func (r *bodyReader) messages() []model.Message {
	n := r.countPlus(1)
	if n == 0 {
		return nil
	}
	ms := make([]model.Message, r.claim(n-1))
	for k := range ms {
		m := &ms[k]
		m.Role, m.Content, m.ToolCallID = r.str(), r.str(), r.str()
		c := r.countPlus(1)
		if c == 0 {
			continue
		}
		m.ToolCalls = make([]model.ToolCall, r.claim(c-1))
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			tc.ID, tc.Name = r.str(), r.str()
			tc.Args = r.object()
		}
	}
	return ms
}
