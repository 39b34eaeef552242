package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzFileName checks that any id maps to one safe name in one directory and
// back, and that any name idOf accepts maps back to itself.
func FuzzFileName(f *testing.F) {
	for _, s := range []string{"", "abc", "Chat", "../x", "a/b", `a\b`, ".", "..", ".hidden", "user@example.com/chat 1",
		"é", "\x00", "%", "!a", "%2e", strings.Repeat("A/", 120), strings.Repeat("z", maxStem)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		stem := stemOf(id)
		name := stem + ext
		if stem == "" || strings.ContainsAny(name, `/\`+"\x00") || strings.HasPrefix(name, ".") {
			t.Fatalf("stemOf(%q) = %q: unsafe", id, stem)
		}
		for i := 0; i < len(stem); i++ {
			if c := stem[i]; c >= 0x80 || 'A' <= c && c <= 'Z' {
				t.Fatalf("stemOf(%q) = %q: byte %q breaks case-insensitive or normalising file systems", id, stem, c)
			}
		}
		if n := len(name + corruptSuffix + "-9223372036854775807"); n > 255 {
			t.Fatalf("stemOf(%q): set-aside name of %d bytes", id, n)
		}
		if stemOf(id) != stem {
			t.Fatal("not deterministic")
		}
		if back, ok := idOf(stem); ok {
			if back != id {
				t.Fatalf("idOf(stemOf(%q)) = %q", id, back)
			}
		} else if !strings.Contains(stem, "=") {
			t.Fatalf("stemOf(%q) = %q does not read back and is not hashed", id, stem)
		}
		// The input as a stem: whatever idOf accepts is canonical.
		if back, ok := idOf(id); ok && stemOf(back) != id {
			t.Fatalf("idOf(%q) = %q, whose stem is %q", id, back, stemOf(back))
		}
	})
}

// FuzzDecode feeds arbitrary bytes as a thread file: the store either loads
// a thread (which then saves and loads to the same JSON) or sets the file
// aside with its bytes intact. It never panics and never returns an error.
func FuzzDecode(f *testing.F) {
	valid, err := json.Marshal(sampleThread("t"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(valid), "", "null", "{}", `{"id":"t"}`, `{"id":"t","messages":[]}`,
		`{"id":"t","values":{"a":[1,{"b":null}]},"revision":18446744073709551615}`, `{"id":"t","values":5}`,
		`{"ID":"t","Values":{"x":"\ud800"}}`, "\xff\xfe", `{"id":"t"} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		s, err := Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(s.dir, threadsDir, "t.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.Thread(ctx, "t")
		if err != nil {
			t.Fatalf("Thread: %v", err)
		}
		if !ok {
			ps := s.Problems()
			if len(ps) != 1 {
				t.Fatalf("not loaded, problems %v", ps)
			}
			if kept, err := os.ReadFile(ps[0].SetAsidePath); err != nil || !bytes.Equal(kept, data) {
				t.Fatalf("set aside %q, %v", kept, err)
			}
			return
		}
		if got.ID != "t" || len(s.Problems()) != 0 {
			t.Fatalf("loaded %+v with problems %v", got, s.Problems())
		}
		rev, err := s.PutThread(ctx, got)
		if err != nil {
			t.Fatalf("saving a loaded thread: %v", err)
		}
		again, ok, err := s.Thread(ctx, "t")
		if err != nil || !ok {
			t.Fatalf("reload: %v %v", ok, err)
		}
		got.Revision = rev
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("save and load changed the thread:\n%s\n%s", a, b)
		}
	})
}
