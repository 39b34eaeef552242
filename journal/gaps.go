package journal

import "fmt"

// gaps follows the runs of a journal past lines that cannot be read (not
// a record, longer than a reader takes, or missing: a line whose prev is
// not the sum of the line read before it). The lost line may belong to
// any run in flight in its file, so their records from there on are left
// out, each run reported once: replaying a run with a phase missing would
// blame the candidate for the journal's damage.
type gaps struct {
	last map[string]string // file or stream -> sum of its last line read; lostSum after a lost one
	at   map[string]string // run in flight -> the file or stream of its last record
	cut  map[string]Pos    // run -> the first line lost after its last record read
	told map[string]bool   // runs whose cut was reported
}

// lostSum marks a file whose last line was lost: the next line's prev
// cannot be checked.
const lostSum = "\x00lost"

func newGaps() *gaps {
	return &gaps{last: map[string]string{}, at: map[string]string{}, cut: map[string]Pos{}, told: map[string]bool{}}
}

// lost notes that the line at pos could not be read.
func (g *gaps) lost(pos Pos) {
	for id, f := range g.at {
		if _, was := g.cut[id]; f == pos.File && !was {
			g.cut[id] = pos
		}
	}
	g.last[pos.File] = lostSum
}

// admit reports whether rec, read at pos, is to be delivered, and adds the
// problem of a run whose records are left out from here.
func (g *gaps) admit(pos Pos, rec *Record, problems *[]Problem) bool {
	f := pos.File
	if prev, seen := g.last[f]; seen && prev != lostSum && rec.Sum != "" && rec.Prev != prev {
		g.lost(Pos{File: f, Line: pos.Line - 1})
	}
	if rec.Sum != "" {
		g.last[f] = rec.Sum
	}
	if at, ok := g.cut[rec.RunID]; ok {
		if !g.told[rec.RunID] {
			g.told[rec.RunID] = true
			*problems = append(*problems, Problem{pos, fmt.Sprintf(
				"run %s: line %d could not be read (or is missing) and may be one of this run's, so its records from here on are left out", rec.RunID, at.Line)})
		}
		return false
	}
	if rec.Rec == KindEnd {
		delete(g.at, rec.RunID)
	} else {
		g.at[rec.RunID] = f
	}
	return true
}
