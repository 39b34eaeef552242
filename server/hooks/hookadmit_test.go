package hooks

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type probeIn struct {
	HookEventName string `json:"hook_event_name"`
}

type probeOut struct {
	Event string `json:"event,omitempty"`
	Error string `json:"error,omitempty"`
}

// The shared admission answers every failure with the protocol's own
// reply, naming the event from the body when it does not decode (the
// ?event= the hook command sends when the body names none), and a
// panicking adapter neither escapes nor keeps its concurrency slot.
func TestServeHookAdmission(t *testing.T) {
	o := &Options{BodyLimit: 1 << 20, Slots: make(chan struct{}, 1), Log: slog.New(slog.DiscardHandler),
		CheckBody: func(b []byte) error {
			if strings.Count(string(b), `"hook_event_name"`) > 1 {
				return errors.New("hook_event_name is given twice")
			}
			return nil
		}}
	p := &hookProtocol[probeIn, probeOut]{agent: "Probe",
		event: func(_ *http.Request, in *probeIn, body []byte) string {
			if in == nil {
				if strings.Contains(string(body), "Gate") {
					return "Gate"
				}
				return ""
			}
			return in.HookEventName
		},
		failure: func(event string, err error) probeOut { return probeOut{Event: event, Error: err.Error()} },
		serve: func(_ context.Context, _ *http.Request, in *probeIn, _ string) probeOut {
			if in.HookEventName == "Panic" {
				panic("the adapter broke")
			}
			return probeOut{Event: in.HookEventName}
		},
	}
	query := ""
	post := func(body string) string {
		t.Helper()
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/hooks/probe"+query, strings.NewReader(body))
		if err := serveHook(o, w, r, p); err != nil || w.Code != http.StatusOK {
			t.Fatalf("%s: %d %v", body, w.Code, err)
		}
		return strings.TrimSpace(w.Body.String())
	}
	for _, tc := range []struct{ body, want string }{
		{`{"hook_event_name":"Stop"}`, `{"event":"Stop"}`},
		{`{"hook_event_name":"Gate"`, `"event":"Gate","error":"the hook input is not valid JSON`},
		// A key given twice is refused before decoding: the event is the
		// one the body names first, not the one a decoder keeps last.
		{`{"hook_event_name":"Gate","hook_event_name":"Stop"}`, `"event":"Gate","error":"hook_event_name is given twice"`},
		{`{"hook_event_name":"Panic"}`, `{"event":"Panic","error":"internal error in the sidecar"}`},
		{`{"hook_event_name":"Panic"}`, `{"event":"Panic","error":"internal error in the sidecar"}`},
		{`{"hook_event_name":"Stop"}`, `{"event":"Stop"}`}, // the slot came back after the panics
	} {
		if got := post(tc.body); !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %s, want %s", tc.body, got, tc.want)
		}
	}
	// The hook command's --event names the event of a body that does not
	// decode when the body names none it can be recognised by; one it can
	// is answered as the body says, so a broken tool event is denied.
	query = "?event=Probe"
	for body, want := range map[string]string{
		`{"hook_event_name":"Gate"`: `"event":"Gate","error":"the hook input is not valid JSON`,
		`{"hook_event_name":"Stop"`: `"event":"Probe","error":"the hook input is not valid JSON`,
	} {
		if got := post(body); !strings.Contains(got, want) {
			t.Errorf("with ?event=, %s: got %s, want %s", body, got, want)
		}
	}
}

// readBody takes a body the server read already as it is, bounded like
// one it reads itself, with the read's error but not its end.
func TestReadBody(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    io.Reader
		want    string
		wantErr error
	}{
		{"read already", preRead{[]byte("abcdef"), io.EOF}, "abcdef", nil},
		{"read already, too large", preRead{[]byte("abcdefgh"), nil}, "abcdef", nil},
		{"read already, failed", preRead{[]byte("ab"), io.ErrUnexpectedEOF}, "ab", io.ErrUnexpectedEOF},
		{"reader", strings.NewReader("abcdefgh"), "abcdef", nil},
	} {
		got, err := readBody(tc.body, 5)
		if string(got) != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
			t.Errorf("%s: %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// preRead is a body the server read in full already.
type preRead struct {
	data []byte
	err  error
}

func (b preRead) Read([]byte) (int, error)  { return 0, errors.New("read through ReadBody") }
func (b preRead) ReadBody() ([]byte, error) { return b.data, b.err }
