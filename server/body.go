package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
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
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(s.bodyWait)) == nil
	data, err := readAllBody(body, n)
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
