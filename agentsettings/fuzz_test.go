package agentsettings

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzSettings checks, for any file, that reading it never panics; that a
// valid one reads back as the same JSON value and, untouched, as the same
// bytes; and that an install merges into it once (a second changes
// nothing) and an uninstall leaves valid JSON. Seeds are in
// testdata/fuzz/FuzzSettings.
func FuzzSettings(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		root, err := parse(data)
		if err != nil {
			if json.Valid(data) && bytes.Count(data, []byte("[")) < maxDepth && bytes.Count(data, []byte("{")) < maxDepth {
				t.Fatalf("valid JSON refused: %v", err)
			}
			return
		}
		if got := encode(root, indentOf(data), eolOf(data)); !bytes.Equal(got, bytes.TrimSpace(data)) {
			t.Fatalf("an untouched file was rewritten:\n%q\n%q", data, got)
		}
		if root.kind != '{' {
			return
		}
		o := defaults(Options{ProjectDir: "/p"})
		var res Result
		if err := o.merge(root, &res); err != nil {
			return // a refused shape
		}
		out := encode(root, indentOf(data), eolOf(data))
		var before, after any
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("an install wrote invalid JSON: %v\n%s", err, out)
		}
		json.Unmarshal(data, &before)
		again, err := parse(out)
		if err != nil {
			t.Fatalf("the installed file does not read back: %v", err)
		}
		var res2 Result
		if err := o.merge(again, &res2); err != nil || res2.Added+res2.Updated+res2.Removed != 0 {
			t.Fatalf("a second install changed %+v (%v):\n%s", res2, err, out)
		}
		o.Uninstall = true
		var res3 Result
		if err := o.merge(again, &res3); err != nil {
			t.Fatalf("uninstall: %v", err)
		}
		if err := json.Unmarshal(encode(again, indentOf(out), eolOf(out)), &after); err != nil {
			t.Fatalf("an uninstall wrote invalid JSON: %v", err)
		}
		// Installing into a file with none of ours, then uninstalling,
		// gives back the same value, but for events left empty (an empty
		// list of groups does nothing; the uninstall drops it, and an empty
		// "hooks" with it).
		if res.Removed == 0 && res.Updated == 0 && res3.Removed == res.Added && !reflect.DeepEqual(dropEmpty(before), after) {
			t.Fatalf("install then uninstall changed the value:\n%v\n%v", before, after)
		}
	})
}

// dropEmpty removes the empty lists of the events an install fills, and
// the hooks when that leaves them empty.
func dropEmpty(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	h, ok := m["hooks"].(map[string]any)
	if !ok {
		return v
	}
	for _, k := range ClaudeCodeEvents {
		if l, ok := h[k].([]any); ok && len(l) == 0 {
			delete(h, k)
		}
	}
	if len(h) == 0 {
		delete(m, "hooks")
	}
	return m
}
