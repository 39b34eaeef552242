package hooks

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// MaxUnread bounds the bytes ReadWithout leaves out of one body: a Cursor
// beforeReadFile carries the whole file it is about to read.
const MaxUnread = 256 << 20

// Unread names the top-level members of a hook endpoint's events that its
// adapter never reads and that may be large, or nil: Cursor's
// beforeReadFile sends the content of the file (megabytes for a lock
// file), which must neither count against the body limit (the read would
// be denied as too large) nor be held in memory.
func Unread(path string) []string {
	if path == "/v1/hooks/cursor" {
		return []string{"content"}
	}
	return nil
}

// ReadWithout reads a JSON object from r, leaving out its top-level
// members named in names, and returns at most limit bytes of it (so a
// caller that passes its body limit plus one tells a body too large). It
// reads past the members it leaves out, and the white space between
// tokens, up to maxUnread bytes of them (MaxUnread for a hook event),
// without keeping them. Input that is not a JSON object is returned as it
// came (within limit), for the decoder to refuse; an object whose members
// are not separated as JSON separates them is an error.
func ReadWithout(r io.Reader, limit, maxUnread int64, names ...string) ([]byte, error) {
	s := &without{in: bufio.NewReaderSize(r, 32<<10), limit: limit, maxUnread: maxUnread, names: names}
	err := s.object()
	if errors.Is(err, errFull) || errors.Is(err, io.EOF) {
		err = nil
	}
	return s.out, err
}

var errFull = errors.New("limit reached")

type without struct {
	in        *bufio.Reader
	out       []byte
	limit     int64
	maxUnread int64
	names     []string
	unread    int64
}

func (s *without) emit(b ...byte) error {
	if room := s.limit - int64(len(s.out)); int64(len(b)) > room {
		s.out = append(s.out, b[:max(room, 0)]...)
		return errFull
	}
	s.out = append(s.out, b...)
	return nil
}

// rest copies what is left, as it is.
func (s *without) rest() error {
	for {
		b, err := s.in.ReadByte()
		if err != nil {
			return err
		}
		if err := s.emit(b); err != nil {
			return err
		}
	}
}

// space reads past white space and returns the byte after it. The white
// space is not kept, so it counts against maxUnread: a body of endless
// blanks ends there.
func (s *without) space() (byte, error) {
	for {
		b, err := s.in.ReadByte()
		if err != nil || (b != ' ' && b != '\t' && b != '\n' && b != '\r') {
			return b, err
		}
		if s.unread++; s.unread > s.maxUnread {
			return 0, s.tooMuch()
		}
	}
}

// bad reports a body that is not a JSON object where one began: passing
// the rest on could make valid JSON of it once a member is left out (a
// missing comma, a trailing one), which the decoder must not accept.
func (s *without) bad(b byte) error {
	return fmt.Errorf("the hook input is not valid JSON: %q where a member of its object was expected", b)
}

func (s *without) object() error {
	b, err := s.space()
	if err != nil {
		return err
	}
	if b != '{' {
		// Not an object: as it came, for the decoder to refuse.
		if err := s.emit(b); err != nil {
			return err
		}
		return s.rest()
	}
	if err := s.emit('{'); err != nil {
		return err
	}
	kept := false
	for first := true; ; first = false {
		b, err := s.space()
		if err != nil {
			return err
		}
		if b == '}' {
			if err := s.emit('}'); err != nil {
				return err
			}
			return s.rest()
		}
		if !first {
			if b != ',' {
				return s.bad(b)
			}
			if b, err = s.space(); err != nil {
				return err
			}
		}
		if b != '"' {
			return s.bad(b)
		}
		raw, err := s.key()
		if err != nil {
			return err
		}
		if b, err = s.space(); err != nil {
			return err
		}
		if b != ':' {
			return s.bad(b)
		}
		if s.drop(raw) {
			if err := s.value(false); err != nil {
				return err
			}
			continue
		}
		if kept {
			if err := s.emit(','); err != nil {
				return err
			}
		}
		kept = true
		if err := s.emit(raw...); err != nil {
			return err
		}
		if err := s.emit(':'); err != nil {
			return err
		}
		if err := s.value(true); err != nil {
			return err
		}
	}
}

func (s *without) tooMuch() error {
	return fmt.Errorf("the hook input holds more than %d bytes the adapter does not read (%s)", s.maxUnread, strings.Join(s.names, ", "))
}

// key reads a member's name, its quotes included (the first is read).
func (s *without) key() ([]byte, error) {
	raw := []byte{'"'}
	for {
		b, err := s.in.ReadByte()
		if err != nil {
			return raw, err
		}
		raw = append(raw, b)
		if int64(len(raw)) > s.limit {
			return raw, s.emit(raw...) // a name that long is kept, and fills the output
		}
		switch b {
		case '\\':
			c, err := s.in.ReadByte()
			if err != nil {
				return raw, err
			}
			raw = append(raw, c)
		case '"':
			return raw, nil
		}
	}
}

// drop reports whether a member's name (raw, quoted) is one to leave out.
func (s *without) drop(raw []byte) bool {
	name := string(raw[1 : len(raw)-1])
	if slices.Contains(raw, '\\') {
		if json.Unmarshal(raw, &name) != nil {
			return false
		}
	}
	return slices.Contains(s.names, name)
}

// value copies (keep) or reads past one value.
func (s *without) value(keep bool) error {
	out := func(b byte) error {
		if keep {
			return s.emit(b)
		}
		if s.unread++; s.unread > s.maxUnread {
			return s.tooMuch()
		}
		return nil
	}
	b, err := s.space()
	if err != nil {
		return err
	}
	if err := out(b); err != nil {
		return err
	}
	depth := 0
	switch b {
	case '"':
		if !keep {
			return s.skipStr()
		}
		return s.str(out)
	case '{', '[':
		depth = 1
	default: // a number or a literal: up to the next delimiter
		for {
			c, err := s.in.ReadByte()
			if err != nil {
				return err
			}
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				return s.in.UnreadByte()
			}
			if err := out(c); err != nil {
				return err
			}
		}
	}
	for depth > 0 {
		c, err := s.in.ReadByte()
		if err != nil {
			return err
		}
		if err := out(c); err != nil {
			return err
		}
		switch c {
		case '"':
			if err := s.str(out); err != nil {
				return err
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return nil
}

// skipStr reads past a string's content and closing quote (its opening
// quote is read) a buffer at a time: the content of a file.
func (s *without) skipStr() error {
	run := 0 // the backslashes just read, in a row
	for {
		chunk, err := s.in.ReadSlice('"')
		if s.unread += int64(len(chunk)); s.unread > s.maxUnread {
			return s.tooMuch()
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			run = backslashes(chunk, run)
			continue
		}
		if err != nil {
			return err
		}
		// An odd run of backslashes before the quote escapes it.
		if backslashes(chunk[:len(chunk)-1], run)%2 == 0 {
			return nil
		}
		run = 0
	}
}

// backslashes is the run of backslashes that ends b, added to run when b
// is all backslashes (the run goes on from the bytes before b).
func backslashes(b []byte, run int) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	if n == len(b) {
		return run + n
	}
	return n
}

// str copies a string's content and closing quote (its opening quote is
// read).
func (s *without) str(out func(byte) error) error {
	for {
		c, err := s.in.ReadByte()
		if err != nil {
			return err
		}
		if err := out(c); err != nil {
			return err
		}
		switch c {
		case '\\':
			e, err := s.in.ReadByte()
			if err != nil {
				return err
			}
			if err := out(e); err != nil {
				return err
			}
		case '"':
			return nil
		}
	}
}
