package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// DefaultBodyTimeout bounds how long a client may take to send a request
// body (Options.BodyTimeout).
const DefaultBodyTimeout = 10 * time.Second

// codeRequestTimeout: the body did not arrive within Options.BodyTimeout.
const codeRequestTimeout errs.Code = "request_timeout"

// bodyBytes is a request body read in full before the request took a
// concurrency slot (see admit); decoders take its bytes without copying.
// err, if set, is what reading it failed with: a reader gets it after the
// bytes that did arrive.
type bodyBytes struct {
	data []byte
	off  int
	err  error
}

func (b *bodyBytes) Read(p []byte) (int, error) {
	if b.off >= len(b.data) {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	return n, nil
}

func (b *bodyBytes) Close() error { return nil }

// ReadBody returns the unread bytes and the read's error at once: the hook
// adapters take them without copying.
func (b *bodyBytes) ReadBody() ([]byte, error) {
	data := b.data[b.off:]
	b.off = len(b.data)
	return data, b.err
}

// readRequestBody reads the whole body, bounded by the body limit and, on a
// real connection, by a read deadline of BodyTimeout: a client that sends
// slowly holds a goroutine and its buffer for that long at most, and no
// concurrency slot at all.
func (s *Server) readRequestBody(w http.ResponseWriter, r *http.Request) (*bodyBytes, error) {
	if r.ContentLength > s.bodyLimit {
		return nil, tooLarge(s.bodyLimit)
	}
	data, err := s.readWithin(w, http.MaxBytesReader(w, r.Body, s.bodyLimit), r.ContentLength)
	if err != nil {
		return nil, s.bodyReadError(err)
	}
	return &bodyBytes{data: data}, nil
}

// readWithin reads body under a read deadline of BodyTimeout (where the
// ResponseWriter can set one: httptest's recorder cannot, and has no
// connection to hold). After a failed read the deadline stays: net/http
// drains what is left of a body before it answers, and must not wait.
func (s *Server) readWithin(w http.ResponseWriter, body io.Reader, n int64) ([]byte, error) {
	return s.readWithinFunc(w, func() ([]byte, error) { return readAllBody(body, n) })
}

// readWithinFunc is readWithin with the read that read does.
func (s *Server) readWithinFunc(w http.ResponseWriter, read func() ([]byte, error)) ([]byte, error) {
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(s.bodyWait)) == nil
	data, err := read()
	if err == nil && deadline {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return data, err
}

func (s *Server) bodyReadError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return tooLarge(mbe.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fail(http.StatusRequestTimeout, codeRequestTimeout,
			"the body did not arrive within %s; send it at once", s.bodyWait)
	}
	return badRequest("cannot read the body: %v", err)
}

// readAllBody reads a body, in one allocation when its length is declared
// (and small).
func readAllBody(body io.Reader, n int64) ([]byte, error) {
	if n > 0 && n <= 64<<10 {
		data := make([]byte, n)
		k, err := io.ReadFull(body, data) // net/http ends the body at Content-Length
		return data[:k], err
	}
	return io.ReadAll(body)
}

// jsonContent refuses a POST whose body is not declared as JSON: a browser
// page may send a cross-site form (text/plain, form-urlencoded, multipart)
// without asking first, never application/json. A POST with no body may
// leave Content-Type out.
func jsonContent(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return nil
	}
	mt, _, _ := strings.Cut(ct, ";")
	if strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	return fail(http.StatusUnsupportedMediaType, codeUnsupportedMediaType,
		"the body must be sent as Content-Type: application/json, not %s (curl: -H 'Content-Type: application/json')", ct)
}

// codeUnsupportedMediaType: a POST body not declared as application/json.
const codeUnsupportedMediaType errs.Code = "unsupported_media_type"

// duplicateKey checks a valid JSON document for an object that names a
// key twice (after unescaping) and returns a 400 naming the key's path
// ("call.args.path", "request.messages[2].role"), or nil. Every endpoint
// refuses such a body: decoders disagree on which value wins (the last,
// or a merge of both), so a second "cmd" must not be able to hide behind
// the first. It runs in one pass without allocating for keys without
// escapes, and objects with many keys are checked with a map, so a body
// of many keys costs linear time.
func duplicateKey(data []byte) error {
	var (
		stackBuf  [16]dupFrame
		keysBuf   [64][]byte
		stack     = stackBuf[:0]
		keys      = keysBuf[:0]
		expectKey bool
	)
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{':
			if len(stack) >= value.MaxDepth {
				return nil // deeper than the decoders accept: they refused it already
			}
			// The decoders match a struct's fields case-insensitively, and
			// a body's top level is always a struct: "Cmd" there is a
			// second "cmd". Deeper objects may be maps (a call's args),
			// where both are keys of their own.
			stack = append(stack, dupFrame{first: len(keys), fold: len(stack) == 0})
			expectKey = true
		case '[':
			if len(stack) >= value.MaxDepth {
				return nil
			}
			stack = append(stack, dupFrame{array: true})
			expectKey = false
		case '}', ']':
			if len(stack) == 0 {
				return nil // not valid JSON: the decoder reports it
			}
			top := &stack[len(stack)-1]
			if !top.array {
				keys = keys[:top.first]
			}
			stack = stack[:len(stack)-1]
		case ',':
			if len(stack) == 0 {
				return nil
			}
			if top := &stack[len(stack)-1]; top.array {
				top.index++
			} else {
				expectKey = true
			}
		case '"':
			end, escaped := stringEnd(data, i+1)
			if end < 0 {
				return nil
			}
			if expectKey && len(stack) > 0 {
				key := data[i+1 : end]
				if escaped || !utf8.Valid(key) { // as the decoders read it: invalid UTF-8 becomes U+FFFD
					var s string
					if json.Unmarshal(data[i:end+1], &s) != nil {
						return nil
					}
					key = []byte(s)
				}
				top := &stack[len(stack)-1]
				if top.has(keys, key) {
					path := dupPath(stack, key)
					return badRequest("the body is not valid JSON for this endpoint: %s is given twice; give each field once", path).withField(path)
				}
				keys = top.add(keys, key)
				top.key = key
				expectKey = false
			}
			i = end
		}
	}
	return nil
}

// linearKeys is how many keys an object compares one by one before it
// switches to a map.
const linearKeys = 16

type dupFrame struct {
	array bool
	fold  bool   // object: keys compare case-insensitively
	index int    // array: the element being read
	key   []byte // object: the member being read
	first int    // object: where its keys start in the shared slice
	n     int    // object: how many keys it has
	many  map[string]struct{}
}

func (f *dupFrame) has(keys [][]byte, key []byte) bool {
	if f.many != nil {
		_, ok := f.many[f.mapKey(key)]
		return ok
	}
	for _, k := range keys[f.first:] {
		if string(k) == string(key) || (f.fold && bytes.EqualFold(k, key)) {
			return true
		}
	}
	return false
}

func (f *dupFrame) add(keys [][]byte, key []byte) [][]byte {
	f.n++
	if f.many != nil {
		f.many[f.mapKey(key)] = struct{}{}
		return keys
	}
	if f.n <= linearKeys {
		return append(keys, key)
	}
	f.many = make(map[string]struct{}, 2*linearKeys)
	for _, k := range keys[f.first:] {
		f.many[f.mapKey(k)] = struct{}{}
	}
	f.many[f.mapKey(key)] = struct{}{}
	return keys[:f.first]
}

// mapKey is key as the frame's map holds it: folded, so that two keys
// bytes.EqualFold calls equal are one entry, in a frame that folds.
func (f *dupFrame) mapKey(key []byte) string {
	if !f.fold {
		return string(key)
	}
	return foldKey(key)
}

// foldKey maps each rune of key to the least rune of its simple case
// folding orbit (the equivalence bytes.EqualFold uses), so that keys
// EqualFold calls equal, and only those, map to the same string.
func foldKey(key []byte) string {
	b := make([]byte, 0, len(key))
	for _, r := range string(key) {
		least := r
		for o := unicode.SimpleFold(r); o != r; o = unicode.SimpleFold(o) {
			least = min(least, o)
		}
		b = utf8.AppendRune(b, least)
	}
	return string(b)
}

// stringEnd returns the index of the quote that ends the string starting
// at from (after its opening quote), and whether it holds escapes; -1 if
// it does not end.
func stringEnd(data []byte, from int) (int, bool) {
	escaped := false
	for j := from; j < len(data); j++ {
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return -1, escaped
}

// dupPath names key in the object on top of stack: its members' keys
// joined with dots, array elements as [i].
func dupPath(stack []dupFrame, key []byte) string {
	var b strings.Builder
	for i, f := range stack {
		switch {
		case f.array:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
		case i == len(stack)-1:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(key)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(f.key)
		}
	}
	return b.String()
}
