package lrusample

import (
	"slices"
	"testing"
)

func TestOldest(t *testing.T) {
	age := func(v int) int64 { return int64(v) }
	for _, c := range []struct {
		name string
		m    map[string]int
		skip int
		want []int
	}{
		{"empty", map[string]int{}, 0, []int{}},
		{"all, oldest first", map[string]int{"a": 30, "b": 10, "c": 20}, 0, []int{10, 20, 30}},
		{"skip excluded", map[string]int{"a": 30, "b": 10, "c": 20}, 10, []int{20, 30}},
		{"exactly Size", map[string]int{"a": 5, "b": 4, "c": 3, "d": 2, "e": 1}, 0, []int{1, 2, 3, 4, 5}},
	} {
		var buf [Size]int
		if got := Oldest(c.m, c.skip, age, &buf); !slices.Equal(got, c.want) {
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
	var buf [Size]int
	got := Oldest(m, -1, func(v int) int64 { return int64(v) }, &buf)
	if len(got) != Size || !slices.IsSorted(got) {
		t.Fatalf("got %v: want %d values, oldest first", got, Size)
	}
}

func TestOldestKey(t *testing.T) {
	odd := func(_ string, v int) (int64, bool) { return int64(v), v%2 == 1 }
	for _, c := range []struct {
		name string
		m    map[string]int
		want string
		ok   bool
	}{
		{"empty", map[string]int{}, "", false},
		{"none may go", map[string]int{"a": 2, "b": 4}, "", false},
		{"oldest that may go", map[string]int{"a": 2, "b": 9, "c": 3, "d": 5}, "c", true},
	} {
		if got, ok := OldestKey(c.m, odd); got != c.want || ok != c.ok {
			t.Errorf("%s: got %q %v, want %q %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
