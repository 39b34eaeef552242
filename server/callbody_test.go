package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/model"
)

// The call bodies decodeCallBody reads without reflection are decoded as
// decodeBody (encoding/json) decodes them: the same accepted bodies, the
// same values, the same refusals.
var callBodies = []string{
	``, ` `, `{}`, `null`, ` {"call":null} `,
	`{"call":{"id":"c1","name":"fs_read","args":{"path":"src/main.go","line":12}}}`,
	`{"call":{"id":"c1","name":"x","args":{"a":[1,{"b":null}],"c":true,"d":-0.5e3}}}`,
	`{"call":{"id":"c1","name":"x","args":null}}`,
	`{"call":{"id":null,"name":null}}`,
	`{"call":{"ID":"c1","Name":"x","ARGS":{}}}`,
	`{"Call":{"id":"c1"},"RESULT":{"Status":"success"}}`,
	`{"call":{"id":"c1"},"result":{"status":"success","data":{"k":["v"]},"message":"m"}}`,
	`{"call":{"id":"c1"},"result":{"status":"error","data":null}}`,
	`{"call":{"id":"c1"},"result":null}`,
	`{"call":{"id":"é\u00e9\ud83d\ude00"}}`,
	// refused
	`{"call":{"id":"c1"}} {}`, `{"call":{"id":"c1"}}x`, `[]`, `"call"`, `12`, `true`,
	`{"call":[]}`, `{"call":"c1"}`, `{"call":{"id":1}}`, `{"call":{"id":"c1","name":false}}`,
	`{"call":{"id":"c1","args":[1]}}`, `{"call":{"id":"c1","args":"a"}}`, `{"call":{"id":"c1","extra":1}}`,
	`{"calls":{}}`, `{"call":{"id":"c1"},"result":{"status":1}}`, `{"call":{"id":"c1"},"result":{"status":"success","more":1}}`,
	`{"call":{"id":"c1"},"result":[]}`, `{"call":{"id":"c1"},"result":{"message":{}}}`,
	`{"call":{"id":"c1"`, `{"call":{"id":"c1",}}`, `{"call":{'id':"c1"}}`, `{"call":{"id":"c1\x01"}}`,
	`{"call":{"args":{"n":1e400}}}`, `{"call":{"args":{"n":01}}}`, "\xef\xbb\xbf{}",
	// fields given twice
	`{"call":5,"call":{"id":"c1"}}`, `{"call":{"id":"c1"},"result":{"status":"a","ſtatus":"b"}}`, `{"call":{"id":"a","ID":"b"}}`,
}

func TestDecodeCallBodyMatchesEncodingJSON(t *testing.T) {
	for _, body := range callBodies {
		compareCallBody(t, []byte(body))
	}
}

// FuzzDecodeCallBody is the same comparison on any bytes.
func FuzzDecodeCallBody(f *testing.F) {
	for _, body := range callBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { compareCallBody(t, body) })
}

func compareCallBody(t *testing.T, body []byte) {
	t.Helper()
	var want, got callBody
	errWant := decodeBody(httptest.NewRequest("POST", "/", bytes.NewReader(body)), &want)
	errGot := decodeCallBody(httptest.NewRequest("POST", "/", bytes.NewReader(body)), &got)
	if foldDuplicates(body) {
		// An object names a field twice: encoding/json merges repeated
		// objects and lets the last spelling win; decodeCallBody keeps the
		// last value and refuses two spellings. Any reply will do.
		return
	}
	if (errWant == nil) != (errGot == nil) {
		t.Fatalf("%q: encoding/json says %v, decodeCallBody says %v", body, errWant, errGot)
	}
	if errGot != nil {
		var ae *apiError
		if !errors.As(errGot, &ae) || ae.status != 400 || !strings.Contains(ae.detail, "JSON") {
			t.Fatalf("%q: want a 400 that says what is wrong with the JSON, got %#v", body, errGot)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\nencoding/json:  %s\ndecodeCallBody: %s", body, show(want), show(got))
	}
}

func show(c callBody) string {
	b, _ := json.Marshal(struct {
		Call   *model.ToolCall
		Result *model.ToolResult
	}{c.Call, c.Result})
	return string(b)
}

// foldDuplicates reports whether an object in body repeats a key, exactly
// or up to case (strings.EqualFold, as both decoders match names).
func foldDuplicates(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		object bool
		keys   []string
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{object: true, key: true})
			case '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.object && top.key {
				for _, k := range top.keys {
					if strings.EqualFold(k, v) { // as the decoders match names
						return true
					}
				}
				top.keys = append(top.keys, v)
				top.key = false
				continue
			}
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}

// appendGateReply writes what json.Marshal writes.
func TestAppendGateReplyMatchesEncodingJSON(t *testing.T) {
	res := model.ToolResult{Status: "error", Message: "secret"}
	for _, g := range []gateReply{
		{Decision: gate.Allow, Args: map[string]any{}, Revision: 0},
		{Decision: gate.Allow, Args: map[string]any{"path": "src/main.go", "line": 12.0, "z": []any{true, nil, "<&>"}}, Revision: 7},
		{Decision: gate.Block, Args: map[string]any{"cmd": "rm -rf /"}, Reason: "not \"allowed\"\n\u2028", Revision: 1 << 40},
		{Decision: gate.Allow, Args: map[string]any{"x": map[string]any{"b": 1e21, "a": 1e-7, "c": math.Copysign(0, -1)}}, Revision: 3},
		{Decision: gate.SetResult, Args: map[string]any{}, Result: &res, Revision: 2},
		{Decision: gate.Suspend, Args: map[string]any{}, Ticket: &gate.Ticket{ID: "t1", Message: "ok?", Options: []string{"yes"}}, Revision: 2},
	} {
		want, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendGateReply(nil, g)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("appendGateReply:\n got %s (%v)\nwant %s", got, err, want)
		}
	}
}

// A body longer than the limit is 413 on the fast path too.
func TestDecodeCallBodyLimit(t *testing.T) {
	body := `{"call":{"id":"c1","args":{"a":"` + strings.Repeat("x", 100) + `"}}}`
	for _, declared := range []bool{true, false} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		if !declared {
			r.ContentLength = -1
			r.Body = io.NopCloser(strings.NewReader(body))
		}
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 64)
		var c callBody
		err := decodeCallBody(r, &c)
		var ae *apiError
		if !errors.As(err, &ae) || ae.status != 413 {
			t.Fatalf("declared length %v: want 413, got %v", declared, err)
		}
	}
}

// A field given twice, under one spelling or two, is refused, whatever the
// order.
func TestDecodeCallBodyRepeatedFields(t *testing.T) {
	for _, body := range []string{
		`{"call":{"id":"a","ID":"b"}}`, `{"call":{"ID":"a","Id":"b"}}`, `{"call":{"id":"c1"},"CALL":5}`,
		`{"call":{"id":"c1"},"result":{"status":"a","ſtatus":"b"}}`,
	} {
		for i := 0; i < 20; i++ { // map order varies from call to call
			var c callBody
			err := decodeCallBody(httptest.NewRequest("POST", "/", strings.NewReader(body)), &c)
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 || !strings.Contains(ae.detail, "twice") {
				t.Fatalf("%s: want 400 naming the field given twice, got %v", body, err)
			}
		}
	}
	var c callBody
	err := decodeCallBody(httptest.NewRequest("POST", "/", strings.NewReader(`{"call":5,"call":{"id":"c1"}}`)), &c)
	var ae *apiError
	if !errors.As(err, &ae) || ae.status != 400 || ae.field != "call" {
		t.Fatalf("a repeated key: want 400 naming call, got %v", err)
	}
}
