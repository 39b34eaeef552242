package filestore

import (
	"strings"
	"testing"
)

func TestStem(t *testing.T) {
	cases := []struct{ id, stem string }{
		{"abc", "abc"},
		{"thread_1-a", "thread_1-a"},
		{"7f3a9c2e-1b4d-4e8f-9a0b-123456789abc", "7f3a9c2e-1b4d-4e8f-9a0b-123456789abc"},
		{"Chat", "!chat"},
		{"", "%"},
		{"../x", "%2e%2e%2fx"},
		{`a\b`, "a%5cb"},
		{".hidden", "%2ehidden"},
		{"user@example.com/chat 1", "user%40example%2ecom%2fchat%201"},
		{"é", "%c3%a9"},
		{"nul\x00", "nul%00"},
	}
	for _, tc := range cases {
		if got := stemOf(tc.id); got != tc.stem {
			t.Errorf("stemOf(%q) = %q, want %q", tc.id, got, tc.stem)
		}
		if id, ok := idOf(tc.stem); !ok || id != tc.id {
			t.Errorf("idOf(%q) = %q, %v, want %q", tc.stem, id, ok, tc.id)
		}
	}
}

func TestStemLong(t *testing.T) {
	long := strings.Repeat("a", maxStem+1)
	s := stemOf(long)
	if len(s) != keepPrefix+1+64 || !strings.HasPrefix(s, strings.Repeat("a", keepPrefix)+"=") {
		t.Fatalf("stemOf(long) = %q", s)
	}
	if _, ok := idOf(s); ok {
		t.Fatal("a hashed stem decoded")
	}
	if stemOf(long+"b") == s {
		t.Fatal("two long ids share a stem")
	}
	// The kept prefix ends between escapes.
	s = stemOf(strings.Repeat("a/", 200))
	if p, _, _ := strings.Cut(s, "="); len(p) > keepPrefix || !strings.HasSuffix(p, "%2f") {
		t.Fatalf("prefix %q", p)
	} else if _, ok := idOf(p); !ok {
		t.Fatalf("prefix %q is cut inside an escape", p)
	}
	// Exactly maxStem plain bytes still read back.
	exact := strings.Repeat("b", maxStem)
	if stemOf(exact) != exact {
		t.Fatal("an id of maxStem plain bytes was hashed")
	}
}

func TestIDOfRejectsWhatStemOfNeverMakes(t *testing.T) {
	for _, s := range []string{"", "A", "%41", "%61", "%2d", "%2", "%", "x%", "%2E", "%zz", "!", "!A", "!1", "a=b", "a.b", "a b", strings.Repeat("a", maxStem+1)} {
		if s == "%" {
			continue // the empty id
		}
		if id, ok := idOf(s); ok {
			t.Errorf("idOf(%q) = %q, want rejected", s, id)
		}
	}
}
