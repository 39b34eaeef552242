// Package errs defines the one error type of awaken-lua: every error a user
// can cause carries a stable Code, a position when there is one,
// and a message that says what to do.
package errs

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Code is a stable, snake_case error code. Codes are API: the CLI prints
// them, problem+json carries them, metrics use them as labels and Lua tests
// match them. Never rename one once shipped.
type Code string

// Error makes a Code usable as a target for errors.Is.
func (c Code) Error() string { return string(c) }

// The codes (docs/design.md, "Errors"). They are the API: never rename one.
const (
	UnknownKey               Code = "unknown_key"
	KeyAlreadyRegistered     Code = "key_already_registered"
	SchemaViolation          Code = "schema_violation"
	UnknownActionHandler     Code = "unknown_action_handler"
	UnknownEffectHandler     Code = "unknown_effect_handler"
	HandlerAlreadyRegistered Code = "handler_already_registered"
	ToolAlreadyRegistered    Code = "tool_already_registered"
	PhaseRunLoopExceeded     Code = "phase_run_loop_exceeded"
	HookFailed               Code = "hook_failed"
	HookTimeout              Code = "hook_timeout"
	InvalidTransition        Code = "invalid_transition"
	UnknownResumeTarget      Code = "unknown_resume_target"
	PluginLoadFailed         Code = "plugin_load_failed"
	ConfigInvalid            Code = "config_invalid"
	RevisionConflict         Code = "revision_conflict"

	// StateTooLarge: a value or a run's state would pass [runtime]
	// max_value_size or max_state_size; nothing is committed.
	StateTooLarge Code = "state_too_large"

	// ModelFailed: a model executor could not produce a reply (a scripted
	// model ran out of turns, an endpoint kept failing or sent a bad reply).
	ModelFailed Code = "model_failed"

	// JournalInvalid: a journal file that cannot be read as one (a record
	// that is not JSON, a format this version does not know).
	JournalInvalid Code = "journal_invalid"
	// JournalTampered: a journal line whose prev does not match the line
	// before it: the file was edited, or lines were removed.
	JournalTampered Code = "journal_tampered"

	// Sidecar codes.
	BadRequest      Code = "bad_request"
	Unauthorized    Code = "unauthorized"
	RunNotFound     Code = "run_not_found"
	PhaseOutOfOrder Code = "phase_out_of_order"
	PayloadTooLarge Code = "payload_too_large"
	Overloaded      Code = "overloaded"
	NotReady        Code = "not_ready"

	// RunLost: a thread was waiting for decisions on a run the store no
	// longer has (its checkpoint was set aside as corrupt, or deleted).
	// The run's pending decisions are lost; the thread is released, and
	// starting a run on it again works.
	RunLost Code = "run_lost"
)

// Pos is a position in a user's file. String gives "file:line:col" like
// go/token, leaving out a zero column and a zero line.
type Pos struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
}

// IsValid reports whether the position names a file.
func (p Pos) IsValid() bool { return p.File != "" }

func (p Pos) String() string {
	if p.File == "" {
		if p.Line > 0 {
			return "-:" + strconv.Itoa(p.Line)
		}
		return "-"
	}
	s := p.File
	if p.Line > 0 {
		s += ":" + strconv.Itoa(p.Line)
		if p.Col > 0 {
			s += ":" + strconv.Itoa(p.Col)
		}
	}
	return s
}

// Error is the error type of awaken-lua.
type Error struct {
	Code   Code
	Pos    Pos    // where the user must look; zero if none
	Plugin string // context known where the error is made
	Phase  string
	Key    string
	// Path is the offending field of a request, as a JSON path from the
	// body's root ("$.call.name", "$.response.tool_calls[2].id"); Field
	// also puts it at the head of Msg, so every rendering shows it.
	Path string
	Msg  string // what went wrong and what to do; lower case, no final period
	Err  error  // the cause
}

// New makes an error with a code and a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Wrap makes an error with a code around a cause.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: err}
}

// Field makes a bad_request error about the request field at path: its
// message starts with the path ("$.call.name: ...").
func Field(path, format string, args ...any) *Error {
	return &Error{Code: BadRequest, Path: path, Msg: path + ": " + fmt.Sprintf(format, args...)}
}

// PathOf returns the request field path of the first *Error in err's chain
// that has one.
func PathOf(err error) string {
	for err != nil {
		if e, ok := err.(*Error); ok && e.Path != "" {
			return e.Path
		}
		err = errors.Unwrap(err)
	}
	return ""
}

// At returns a copy of e at the position p.
func (e *Error) At(p Pos) *Error { c := *e; c.Pos = p; return &c }

// Error renders "pos: code: plugin/phase: message: cause", leaving out what is
// unknown, so editors can jump to the position.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Pos.IsValid() {
		b.WriteString(e.Pos.String())
		b.WriteString(": ")
	}
	b.WriteString(string(e.Code))
	// Each part after the first is joined with ": ", so an error without a
	// code never starts with one (": no plugin directory").
	sep := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), ": ") {
			b.WriteString(": ")
		}
	}
	if e.Plugin != "" || e.Phase != "" {
		sep()
		b.WriteString(e.Plugin)
		if e.Phase != "" {
			if e.Plugin != "" {
				b.WriteByte('/')
			}
			b.WriteString(e.Phase)
		}
	}
	if e.Msg != "" {
		sep()
		b.WriteString(e.Msg)
	}
	if e.Err != nil {
		sep()
		if in, ok := e.Err.(*Error); ok && in.Code == e.Code {
			// The cause says the same code: once is enough
			// ("config_invalid: permissions.allow[0]: permission rule ...").
			c := *in
			c.Code = ""
			b.WriteString(c.Error())
		} else {
			b.WriteString(e.Err.Error())
		}
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches a Code, so errors.Is(err, errs.UnknownKey) works.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// CodeOf returns the code of the outermost *Error in err's chain, or "" for
// an internal error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var c Code
	if errors.As(err, &c) {
		return c
	}
	return ""
}

// PosOf returns the position of the first *Error in err's chain that has one.
func PosOf(err error) Pos {
	for err != nil {
		if e, ok := err.(*Error); ok && e.Pos.IsValid() {
			return e.Pos
		}
		err = errors.Unwrap(err)
	}
	return Pos{}
}

// List collects many problems, like go/scanner.ErrorList.
type List []*Error

// Add appends an error. A joined error adds each of its parts; an error
// without a code is kept with an empty code (an internal error).
func (l *List) Add(err error) {
	if err == nil {
		return
	}
	if e, ok := err.(*Error); ok {
		*l = append(*l, e)
		return
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			l.Add(e)
		}
		return
	}
	if el, ok := err.(List); ok {
		*l = append(*l, el...)
		return
	}
	var e *Error
	if errors.As(err, &e) {
		*l = append(*l, e)
		return
	}
	*l = append(*l, &Error{Msg: err.Error()})
}

// Sort orders the list by position, then message.
func (l List) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return l[i].Error() < l[j].Error()
	})
}

// Error renders one problem per line.
func (l List) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap exposes the problems, so errors.Is(err, errs.ConfigInvalid) and
// errors.As see through a list.
func (l List) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Err returns nil for an empty list, the only error for one, or the list.
func (l List) Err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return l
}
