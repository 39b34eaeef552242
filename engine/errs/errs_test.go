package errs

import (
	"errors"
	"fmt"
	"testing"
)

func TestSuggest(t *testing.T) {
	names := []string{"plugins", "plugin_dir", "model", "text", "usage", "budget", "default", "tool_gate", "file", "memory"}
	for in, want := range map[string]string{
		"plugns": "plugins", "plugin_dirs": "plugin_dir", "modle": "model", "tetx": "text", "usgae": "usage",
		"defualt": "default", "tool_gat": "tool_gate", "redact": "", "disk": "", "plugins": "", "x": "",
	} {
		if got := Suggest(in, names); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorRendering(t *testing.T) {
	e := &Error{Code: HookFailed, Pos: Pos{File: "scripts/g.lua", Line: 3}, Plugin: "g", Phase: "step_start", Msg: "boom"}
	if got := e.Error(); got != "scripts/g.lua:3: hook_failed: g/step_start: boom" {
		t.Fatal(got)
	}
	wrapped := fmt.Errorf("reload: %w", e)
	if !errors.Is(wrapped, HookFailed) || CodeOf(wrapped) != HookFailed || PosOf(wrapped).Line != 3 {
		t.Fatal("wrapping lost the code or the position")
	}
	var l List
	l.Add(New(ConfigInvalid, "b").At(Pos{File: "b.toml", Line: 1}))
	l.Add(errors.Join(New(UnknownKey, "a").At(Pos{File: "a.toml", Line: 9}), nil))
	l.Sort()
	if l[0].Code != UnknownKey || !errors.Is(l.Err(), ConfigInvalid) || !errors.Is(l.Err(), UnknownKey) {
		t.Fatalf("list %v", l)
	}
	if (List{}).Err() != nil {
		t.Fatal("an empty list is not an error")
	}
	f := fmt.Errorf("tool_gate: %w", Field("$.call.name", "a tool call needs a name"))
	if got := f.Error(); got != "tool_gate: bad_request: $.call.name: a tool call needs a name" || PathOf(f) != "$.call.name" || CodeOf(f) != BadRequest {
		t.Fatalf("field error %q (path %q)", got, PathOf(f))
	}
	if (Pos{File: "f", Line: 2, Col: 5}).String() != "f:2:5" || (Pos{}).String() != "-" {
		t.Fatal("positions")
	}
}

// TestErrorTextParts: the parts of an error are joined with ": ", and an
// error without a code or a position does not start with one.
func TestErrorTextParts(t *testing.T) {
	for _, tc := range []struct {
		e    *Error
		want string
	}{
		{&Error{Msg: "no plugin directory at x"}, "no plugin directory at x"},
		{&Error{Code: ConfigInvalid, Msg: "m"}, "config_invalid: m"},
		{&Error{Pos: Pos{File: "a.lua", Line: 3}, Msg: "m"}, "a.lua:3: m"},
		{&Error{Pos: Pos{File: "a.lua", Line: 3}, Code: HookFailed, Plugin: "p", Phase: "step_end", Msg: "m"}, "a.lua:3: hook_failed: p/step_end: m"},
		{&Error{Plugin: "p", Msg: "m"}, "p: m"},
		{&Error{Err: errors.New("inner")}, "inner"},
		{Wrap(ConfigInvalid, New(ConfigInvalid, "rule %q is bad", "Bash("), "permissions.allow[0]"), `config_invalid: permissions.allow[0]: rule "Bash(" is bad`},
		{Wrap(ConfigInvalid, New(HookFailed, "boom"), "outer"), "config_invalid: outer: hook_failed: boom"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}
