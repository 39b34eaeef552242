package run

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// callLog is __runtime.tool_calls as the session keeps it: the step's call
// records by position in a persistent vector (a trie of logWidth-wide
// nodes), so recording one call copies O(log n) small nodes instead of the
// whole map, and the map plugins read ({call id: record}) is built only when
// someone reads it: a callLog is a state.Lazy. A version is immutable once
// made.
type callLog struct {
	owner *Session // the session and calls generation it mirrors
	gen   uint64
	root  unsafe.Pointer // a *logLeaf when depth is 0, else a *logInner
	depth int            // levels of inner nodes above the leaves
	n     int            // positions in use (holes included)
	count int            // records (positions that hold one)
	size  int            // the records' entries encoded, summed (see entrySize)

	once sync.Once
	v    any
}

const (
	logBits  = 2
	logWidth = 1 << logBits
	logMask  = logWidth - 1
)

// logInner holds *logInner children, or *logLeaf children on the level
// above the leaves.
type logInner [logWidth]unsafe.Pointer

// logLeaf holds records.
type logLeaf [logWidth]logEntry

// logEntry is one call's record; an empty id is a hole (a call announced
// but not yet recorded).
type logEntry struct {
	id   string
	rec  *logRecord
	size int32 // the length of `"id":record` encoded as JSON
	// fixed is the length of the parts that never change once the call is
	// announced: `"id":` before the record, and its id, name and args
	// fields (args change only with a rewrite, which makes a new map).
	fixed int32
}

func (l *callLog) capacity() int { return logWidth << (logBits * l.depth) }

// derive starts a new version from l (sync.Once is not copied).
func (l *callLog) derive() *callLog {
	return &callLog{owner: l.owner, gen: l.gen, root: l.root, depth: l.depth, n: l.n, count: l.count, size: l.size}
}

// with returns a new version with position i holding e; positions past the
// end become holes.
func (l *callLog) with(i int, e logEntry) *callLog {
	next := l.derive()
	for i >= next.capacity() {
		// Grow a level: the old root becomes the first child.
		root := new(logInner)
		root[0] = next.root
		next.root, next.depth = unsafe.Pointer(root), next.depth+1
	}
	var leaf *logLeaf
	if next.depth == 0 {
		leaf = copyLeaf(next.root)
		next.root = unsafe.Pointer(leaf)
	} else {
		n := copyInner(next.root)
		next.root = unsafe.Pointer(n)
		for level := next.depth; level > 1; level-- {
			slot := (i >> (logBits * level)) & logMask
			c := copyInner(n[slot])
			n[slot] = unsafe.Pointer(c)
			n = c
		}
		slot := (i >> logBits) & logMask
		leaf = copyLeaf(n[slot])
		n[slot] = unsafe.Pointer(leaf)
	}
	old := &leaf[i&logMask]
	if old.id != "" {
		next.count--
		next.size -= int(old.size)
	}
	*old = e
	if e.id != "" {
		next.count++
		next.size += int(e.size)
	}
	next.n = max(next.n, i+1)
	return next
}

// at returns the entry at position i (a hole past the end).
func (l *callLog) at(i int) logEntry {
	if i >= l.capacity() {
		return logEntry{}
	}
	p := l.root
	for level := l.depth; level > 0 && p != nil; level-- {
		p = (*logInner)(p)[(i>>(logBits*level))&logMask]
	}
	if p == nil {
		return logEntry{}
	}
	return (*logLeaf)(p)[i&logMask]
}

func copyInner(p unsafe.Pointer) *logInner {
	c := new(logInner)
	if p != nil {
		*c = *(*logInner)(p)
	}
	return c
}

func copyLeaf(p unsafe.Pointer) *logLeaf {
	c := new(logLeaf)
	if p != nil {
		*c = *(*logLeaf)(p)
	}
	return c
}

// newCallLog builds a version holding n entries, entry(i) at position i,
// in O(n).
func newCallLog(owner *Session, gen uint64, n int, entry func(i int) logEntry) *callLog {
	l := &callLog{owner: owner, gen: gen, n: n}
	for l.capacity() < n {
		l.depth++
	}
	fill := func(leaf *logLeaf, from int) {
		for j := range min(logWidth, n-from) {
			e := entry(from + j)
			leaf[j] = e
			if e.id != "" {
				l.count++
				l.size += int(e.size)
			}
		}
	}
	if l.depth == 0 {
		leaf := new(logLeaf)
		fill(leaf, 0)
		l.root = unsafe.Pointer(leaf)
		return l
	}
	level := make([]unsafe.Pointer, 0, (n+logMask)/logWidth)
	for i := 0; i < n; i += logWidth {
		leaf := new(logLeaf)
		fill(leaf, i)
		level = append(level, unsafe.Pointer(leaf))
	}
	for d := 0; d < l.depth; d++ {
		up := make([]unsafe.Pointer, 0, (len(level)+logMask)/logWidth)
		for i := 0; i < len(level); i += logWidth {
			in := new(logInner)
			copy(in[:], level[i:min(i+logWidth, len(level))])
			up = append(up, unsafe.Pointer(in))
		}
		level = up
	}
	l.root = level[0]
	return l
}

// each calls f for every record, in position order.
func (l *callLog) each(f func(e *logEntry)) {
	var walk func(p unsafe.Pointer, level int)
	walk = func(p unsafe.Pointer, level int) {
		if p == nil {
			return
		}
		if level == 0 {
			leaf := (*logLeaf)(p)
			for i := range leaf {
				if leaf[i].id != "" {
					f(&leaf[i])
				}
			}
			return
		}
		for _, k := range (*logInner)(p) {
			walk(k, level-1)
		}
	}
	walk(l.root, l.depth)
}

// Value builds the map plugins read (state.Lazy).
func (l *callLog) Value() any {
	l.once.Do(func() {
		m := make(map[string]any, l.count)
		l.each(func(e *logEntry) { m[e.id] = e.rec.value() })
		l.v = m
	})
	return l.v
}

// appendBody appends Value() in the memory store's body form
// (memthread.go) without building it: a done run's frozen state holds its
// last step's calls so. False when a record holds a value that form
// cannot.
func (l *callLog) appendBody(b []byte) ([]byte, bool) {
	b = binary.AppendUvarint(append(b, tagObject), uint64(l.count))
	ok := true
	l.each(func(e *logEntry) {
		if ok {
			b, ok = e.rec.appendBody(appendString(b, e.id))
		}
	})
	return b, ok
}

// EncodedSize is the length of Value() encoded as JSON (state.Lazy).
func (l *callLog) EncodedSize() int {
	if l.count == 0 {
		return 2 // {}
	}
	return 2 + l.size + l.count - 1
}

// currentLog returns the committed callLog when it mirrors this session's
// current calls (not those of an earlier step, nor a map restored from a
// checkpoint), else nil.
func (s *Session) currentLog() *callLog {
	log, _ := s.st().Snapshot().Raw(s.rt.toolCalls).(*callLog)
	if log == nil || log.owner != s || log.gen != s.callsGen || log.n > len(s.calls) {
		return nil
	}
	return log
}

// logEntry is c's record as plugins read it in __runtime.tool_calls, with
// its encoded size, measured field by field (walking the map would cost
// more than building it). The map itself is built when first read: most
// records are replaced, or the run ends, before any plugin reads them.
// prev is the call's previous entry, whose args' size is kept when the
// args are the same map.
func (s *Session) logEntry(c *CallRecord, limit int, prev logEntry) logEntry {
	lr := &logRecord{id: c.Call.ID, name: c.Call.Name, args: c.Call.Args, status: c.Status,
		step: float64(s.info.Step), expired: c.Expired, limit: limit}
	if g := c.Gate; g != nil {
		lr.gated, lr.decision, lr.plugin, lr.reason, lr.rewrittenBy = true, g.Decision, g.Plugin, g.Reason, g.RewrittenBy
		if g.Ticket != nil {
			lr.ticket, lr.hasTicket = g.Ticket.ID, true
		}
	}
	if c.Result != nil {
		res := *c.Result
		lr.result = &res
	}
	fixed := -1
	if prev.id == c.Call.ID && prev.rec != nil && sameMap(prev.rec.args, c.Call.Args) {
		fixed = int(prev.fixed)
	}
	if fixed < 0 {
		id := value.StringSize(c.Call.ID)
		fixed = id + 1 + len(`"id":`) + id + len(`"name":`) + value.StringSize(c.Call.Name) +
			len(`"args":`) + encodedLen(c.Call.Args, limit)
	}
	r := recordBuilder{limit: limit} // measured, not built
	lr.fill(&r)
	return logEntry{id: c.Call.ID, rec: lr, size: int32(fixed + r.size()), fixed: int32(fixed)}
}

// logRecord is a call's record as it stood when recorded (the session
// changes its own call records in place), and the map plugins read, built
// from it once.
type logRecord struct {
	id, name                    string
	args                        map[string]any // never changed in place
	status                      CallStatus
	step                        float64
	gated, hasTicket, expired   bool
	decision                    gate.Kind
	plugin, reason, rewrittenBy string
	ticket                      string
	result                      *model.ToolResult // a copy
	limit                       int
	once                        sync.Once
	m                           map[string]any
}

// fill puts the record's fields into r (or only measures them when r.m is
// nil): one list of fields for the size and the map.
func (lr *logRecord) fill(r *recordBuilder) {
	if r.m != nil {
		r.m["id"], r.m["name"], r.m["args"] = lr.id, lr.name, lr.args
	}
	if r.enc {
		r.putStr("id", lr.id)
		r.putStr("name", lr.name)
		if lr.args == nil {
			r.put("args", nil) // read back as JSON reads it: null
		} else {
			r.put("args", lr.args)
		}
	}
	r.k += 3 // measured apart, as fixed
	r.str("status", string(lr.status))
	r.num("step", lr.step)
	if lr.gated {
		r.str("decision", lr.decision.String())
		if lr.plugin != "" {
			r.str("plugin", lr.plugin)
		}
		if lr.reason != "" {
			r.str("reason", lr.reason)
		}
		if lr.rewrittenBy != "" {
			r.str("rewritten_by", lr.rewrittenBy)
		}
		if lr.hasTicket {
			r.str("ticket", lr.ticket)
		}
	}
	if lr.result != nil {
		r.result(*lr.result)
	}
	if lr.expired {
		r.add("expired", true)
	}
}

// value is the record as plugins read it, built on first use.
func (lr *logRecord) value() map[string]any {
	lr.once.Do(func() {
		r := recordBuilder{m: make(map[string]any, 8), limit: lr.limit}
		lr.fill(&r)
		lr.m = r.m
	})
	return lr.m
}

// appendBody appends the record as value() builds it, in the memory
// store's body form, without building the map; false when a field holds a
// value that form cannot. The record's fields never change once made, so
// this reads them without the once that guards the map.
func (lr *logRecord) appendBody(b []byte) ([]byte, bool) {
	// One pass counts the fields, one appends them. (A shared helper
	// taking fill as a func value would put both builders on the heap.)
	count := recordBuilder{limit: lr.limit, nosize: true}
	lr.fill(&count)
	r := recordBuilder{limit: lr.limit, enc: true, nosize: true, b: binary.AppendUvarint(append(b, tagObject), uint64(count.k))}
	lr.fill(&r)
	return r.b, !r.bad
}

// sameMap reports whether a and b are the same map (not equal ones).
func sameMap(a, b map[string]any) bool {
	return a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// recordBuilder builds a record map and the length of its JSON encoding;
// with a nil map it only measures. With enc it also appends the fields to
// b in the memory store's body form (memthread.go); bad: a field holds a
// value that form cannot.
type recordBuilder struct {
	m     map[string]any
	n     int // the fields' `"key":value` lengths, summed
	k     int // the fields
	limit int
	enc   bool
	bad   bool
	b     []byte
	// nosize: count the fields (or append them) without measuring them.
	nosize bool
}

// putStr appends the field k: v to b when encoding, without boxing v.
func (r *recordBuilder) putStr(k, v string) {
	if r.enc {
		r.b = appendString(append(appendString(r.b, k), tagString), v)
	}
}

// put appends the field k: v to b when encoding.
func (r *recordBuilder) put(k string, v any) {
	if !r.enc {
		return
	}
	if _, ok := valueSize(v); !ok {
		r.bad = true
		return
	}
	r.b = appendValue(appendString(r.b, k), v)
}

// The keys are plain ASCII: `"k":` is len(k)+3 bytes.

func (r *recordBuilder) str(k, v string) {
	if r.m != nil {
		r.m[k] = v
	}
	r.putStr(k, v)
	r.k++
	if !r.nosize {
		r.n += len(k) + 3 + value.StringSize(v)
	}
}

func (r *recordBuilder) add(k string, v any) {
	if r.m != nil {
		r.m[k] = v
	}
	r.put(k, v)
	r.k++
	if !r.nosize {
		r.n += len(k) + 3 + encodedLen(v, r.limit)
	}
}

// num is add for a number, boxed only for the map.
func (r *recordBuilder) num(k string, v float64) {
	if r.m != nil {
		r.m[k] = v
	}
	if r.enc {
		r.b = binary.LittleEndian.AppendUint64(append(appendString(r.b, k), tagFloat), math.Float64bits(v))
	}
	r.k++
	if !r.nosize {
		r.n += len(k) + 3 + value.NumberSize(v)
	}
}

// result adds a tool result as its Value() {status, data?, message?},
// measured field by field.
func (r *recordBuilder) result(res model.ToolResult) {
	if r.m != nil {
		r.m["result"] = res.Value()
	}
	if r.enc {
		// res.Value(), without building it.
		n := 1
		if res.Data != nil {
			n++
		}
		if res.Message != "" {
			n++
		}
		r.b = binary.AppendUvarint(append(appendString(r.b, "result"), tagObject), uint64(n))
		r.putStr("status", res.Status)
		if res.Data != nil {
			r.put("data", res.Data)
		}
		if res.Message != "" {
			r.putStr("message", res.Message)
		}
	}
	r.k++
	if r.nosize {
		return
	}
	n := len(`{"status":}`) + value.StringSize(res.Status)
	if res.Data != nil {
		n += len(`,"data":`) + encodedLen(res.Data, r.limit)
	}
	if res.Message != "" {
		n += len(`,"message":`) + value.StringSize(res.Message)
	}
	r.n += len("result") + 3 + n
}

// size is the length of the record encoded, less the fixed fields' own
// lengths (counted apart): the braces and a comma between each two fields.
func (r *recordBuilder) size() int { return 2 + r.n + r.k - 1 }

// encodedLen is the length of v encoded as JSON, measured no further than
// past limit.
func encodedLen(v any, limit int) int {
	n, err := value.EncodedSize(v, limit)
	if err != nil {
		// A Go gate's result may hold Go numbers that encoding/json
		// writes and the canonical encoder refuses.
		b, _ := json.Marshal(v)
		n = len(b)
	}
	return n
}
