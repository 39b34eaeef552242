package lrusample

import (
	"slices"
	"testing"
)

// keys lists the sampled keys in order.
func keys(es []Entry[string, int]) []string {
	ks := []string{}
	for _, e := range es {
		ks = append(ks, e.Key)
	}
	return ks
}

func TestOldest(t *testing.T) {
	odd := func(_ string, v int) (int64, bool) { return int64(v), v%2 == 1 }
	all := func(_ string, v int) (int64, bool) { return int64(v), true }
	for _, c := range []struct {
		name string
		m    map[string]int
		used func(string, int) (int64, bool)
		want []string
	}{
		{"empty", map[string]int{}, all, []string{}},
		{"all, oldest first", map[string]int{"a": 30, "b": 10, "c": 20}, all, []string{"b", "c", "a"}},
		{"exactly Size", map[string]int{"a": 5, "b": 4, "c": 3, "d": 2, "e": 1}, all, []string{"e", "d", "c", "b", "a"}},
		{"none may go", map[string]int{"a": 2, "b": 4}, odd, []string{}},
		{"only those that may go", map[string]int{"a": 2, "b": 9, "c": 3, "d": 5}, odd, []string{"c", "d", "b"}},
	} {
		var buf [Size]Entry[string, int]
		if got := keys(Oldest(c.m, c.used, &buf)); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// Past Size entries it samples Size of them, still in order.
func TestOldestSamples(t *testing.T) {
	m := map[int]int{}
	for i := range 100 {
		m[i] = i
	}
	var buf [Size]Entry[int, int]
	got := Oldest(m, func(_, v int) (int64, bool) { return int64(v), true }, &buf)
	if len(got) != Size || !slices.IsSortedFunc(got, func(a, b Entry[int, int]) int { return a.Val - b.Val }) {
		t.Fatalf("got %v: want %d entries, oldest first", got, Size)
	}
}
