package errs

import "testing"

// A name far longer than every candidate (a client may send a megabyte)
// is no typo of one, and costs no edit-distance table.
func TestSuggestLongName(t *testing.T) {
	long := make([]byte, 1<<20)
	for i := range long {
		long[i] = 'a'
	}
	name := string(long)
	cands := []string{"default", "reviewer", "aaaa"}
	allocs := testing.AllocsPerRun(1, func() {
		if s := Suggest(name, cands); s != "" {
			t.Errorf("Suggest(1 MiB) = %q", s)
		}
	})
	if allocs > 4 {
		t.Errorf("Suggest of a 1 MiB name made %.0f allocations", allocs)
	}
	if got := Suggest("defualt", cands); got != "default" {
		t.Errorf("Suggest(defualt) = %q", got)
	}
}
