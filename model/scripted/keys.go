package scripted

import "github.com/awaken-lua/awaken-lua/internal/tomlpos"

// Scripts repeat the same keys in every [[turns]], so errors find their line
// through a tomlpos.Index: the n-th undecoded occurrence of a key is its n-th
// definition, and turns and tool calls are counted among the index's array
// elements.

// turnLine is the line where turn i (0-based) starts.
func turnLine(x *tomlpos.Index, i int) int {
	turn := -1
	for _, e := range x.Elems() {
		if e.Key == "turns" {
			turn++
			if turn == i {
				return e.Line
			}
		}
	}
	return 0
}

// callLine is the line where tool call j of turn i (both 0-based) starts,
// or the turn's line when it cannot be found.
func callLine(x *tomlpos.Index, i, j int) int {
	turn, call := -1, -1
	for _, e := range x.Elems() {
		switch {
		case e.Key == "turns":
			turn++
			call = -1
		case e.Key == "turns.tool_calls" && turn == i:
			call++
			if call == j {
				return e.Line
			}
		}
	}
	return turnLine(x, i)
}
