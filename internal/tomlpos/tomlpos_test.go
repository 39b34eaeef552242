package tomlpos

import (
	"reflect"
	"testing"
)

const doc = `# a comment
top = 1
[runtime]
max_steps = 16 # trailing
"quoted key" = 'x'
a.b.c = "dotted"

[agents.ops.plugins.permission]
text = """
not = a key
"""
rules = [
  { tool = "a" },
  { tool = "b", nested = { deep = 1 } },
]

[[plugins.permission.rules]]
tool = "x"
[[plugins.permission.rules]]
tool = "y"
`

func TestLines(t *testing.T) {
	x := Scan(doc)
	tests := []struct {
		key  string
		n    int
		want int
	}{
		{"top", 0, 2},
		{"runtime", 0, 3},
		{"runtime.max_steps", 0, 4},
		{`runtime."quoted key"`, 0, 5},
		{"runtime.a", 0, 6},
		{"runtime.a.b.c", 0, 6},
		{"agents", 0, 8}, // implied by the header
		{"agents.ops.plugins", 0, 8},
		{"agents.ops.plugins.permission.text", 0, 9},
		{"not", 0, 0}, // inside a multi-line string
		{"agents.ops.plugins.permission.rules", 0, 12},
		{"agents.ops.plugins.permission.rules.tool", 0, 13},
		{"agents.ops.plugins.permission.rules.tool", 1, 14},
		{"agents.ops.plugins.permission.rules.nested.deep", 0, 14},
		{"plugins.permission.rules", 0, 17},
		{"plugins.permission.rules.tool", 1, 20},
		{"plugins.permission.rules.tool", 5, 20}, // past the end: the last one
		{"missing", 0, 0},
	}
	for _, tc := range tests {
		if got := x.Line(tc.key, tc.n); got != tc.want {
			t.Errorf("Line(%q, %d) = %d, want %d", tc.key, tc.n, got, tc.want)
		}
	}
	if got := x.ElemLines("agents.ops.plugins.permission.rules"); !reflect.DeepEqual(got, []int{13, 14}) {
		t.Errorf("inline elements at %v", got)
	}
	if got := x.ElemLines("plugins.permission.rules"); !reflect.DeepEqual(got, []int{17, 19}) {
		t.Errorf("table elements at %v", got)
	}
	if got := x.Lines("plugins.permission.rules.tool"); !reflect.DeepEqual(got, []int{18, 20}) {
		t.Errorf("Lines = %v", got)
	}
}

func TestByteOrderMark(t *testing.T) {
	if got := Scan("\ufeff[runtime]\r\nmax_steps = 3\r\n").Line("runtime.max_steps", 0); got != 2 {
		t.Fatalf("line %d, want 2", got)
	}
}

func TestNilIndex(t *testing.T) {
	var x *Index
	if x.Line("a", 0) != 0 || x.Lines("a") != nil || x.Elems() != nil || x.ElemLines("a") != nil {
		t.Fatal("a nil index must know nothing")
	}
}

// FuzzScan checks that no input makes the scanner panic or hang, and that
// every line it reports is inside the input.
func FuzzScan(f *testing.F) {
	f.Add(doc)
	f.Add("a = [ { b = '''\n''' }, [ { c = 1 } ] ]\n[[x]]\n\"k\\\"\" = 1")
	f.Add("[a\n\"unterminated = 1\nb = {")
	f.Fuzz(func(t *testing.T, src string) {
		lines := 1
		for i := 0; i < len(src); i++ {
			if src[i] == '\n' {
				lines++
			}
		}
		x := Scan(src)
		for k, ls := range x.keys {
			for _, l := range ls {
				if l < 1 || l > lines {
					t.Fatalf("key %q at line %d of %d", k, l, lines)
				}
			}
		}
		for _, e := range x.Elems() {
			if e.Line < 1 || e.Line > lines {
				t.Fatalf("element %q at line %d of %d", e.Key, e.Line, lines)
			}
		}
	})
}
