package journal

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// gaps follows the runs of a journal past lines that cannot be read (not
// a record, longer than a reader takes, or missing: a line whose prev is
// not the sum of the line read before it, a file's first line that names
// a previous one, or a file of a writer missing between two it left). The
// lost line may belong to any run in flight in its writer's files (a run
// goes on in the next file when its writer rotates), so their records from
// there on are left out, each run reported once: replaying a run with a
// phase missing would blame the candidate for the journal's damage.
type gaps struct {
	last map[string]string // file or stream -> sum of its last line read; lostSum after a lost one
	at   map[string]string // run in flight -> the writer of its last record
	cut  map[string]Pos    // run -> the first line lost after its last record read
	told map[string]bool   // runs whose cut was reported
	// files: a writer's files are named by it (see writerOf); seq is the
	// number of the last file of each writer read.
	files bool
	seq   map[string]int
}

// lostSum marks a file whose last line was lost: the next line's prev
// cannot be checked.
const lostSum = "\x00lost"

// newGaps follows journal files (files) or a store's streams.
func newGaps(files bool) *gaps {
	return &gaps{last: map[string]string{}, at: map[string]string{}, cut: map[string]Pos{}, told: map[string]bool{},
		files: files, seq: map[string]int{}}
}

// writerOf names the writer of a file or stream and the file's number
// among the writer's files (0 when not known). A Writer names its files
// journal-<start>-<pid>-<seq>.ndjson, so a process's files are one writer;
// a file named otherwise, and a stream, is a writer of its own.
func (g *gaps) writerOf(file string) (string, int) {
	if !g.files {
		return file, 0
	}
	name, ok := strings.CutPrefix(filepath.Base(file), "journal-")
	name, ok2 := strings.CutSuffix(name, ".ndjson")
	parts := strings.Split(name, "-")
	if !ok || !ok2 || len(parts) != 3 {
		return file, 0
	}
	seq, err := strconv.Atoi(parts[2])
	if err != nil || seq <= 0 {
		return file, 0
	}
	return filepath.Dir(file) + string(filepath.Separator) + "pid " + parts[1], seq
}

// file notes that a file is read next: one its writer numbered past the
// one after the last read means the files between are missing, and the
// lines of the runs in flight in them with them. A number not past the
// last is a new writer of the process (a reload that changed [journal]),
// which numbers its files from 1 and takes over the runs in flight.
func (g *gaps) file(file string) {
	w, seq := g.writerOf(file)
	if seq == 0 {
		return
	}
	if last, ok := g.seq[w]; ok && seq > last+1 {
		g.lost(Pos{File: file})
	}
	g.seq[w] = seq
}

// lost notes that the line at pos could not be read (Line 0: lines before
// the file's first are missing).
func (g *gaps) lost(pos Pos) {
	w, _ := g.writerOf(pos.File)
	for id, at := range g.at {
		if _, was := g.cut[id]; at == w && !was {
			g.cut[id] = pos
		}
	}
	g.last[pos.File] = lostSum
}

// admit reports whether rec, read at pos, is to be delivered, and adds the
// problem of a run whose records are left out from here.
func (g *gaps) admit(pos Pos, rec *Record, problems *[]Problem) bool {
	f := pos.File
	prev, seen := g.last[f]
	switch {
	case seen && prev != lostSum && rec.Sum != "" && rec.Prev != prev:
		g.lost(Pos{File: f, Line: pos.Line - 1})
	case !seen && rec.Prev != "":
		// The first line read of a file names a line before it: lines
		// were removed from its start. (A store read from a time on
		// starts its streams anywhere; it is the first line read there.)
		if g.files {
			g.lost(Pos{File: f})
		}
	}
	if rec.Sum != "" {
		g.last[f] = rec.Sum
	}
	if rec.Rec == KindLost {
		return true // a writer's marker, of no run (see Lines)
	}
	if at, ok := g.cut[rec.RunID]; ok {
		if !g.told[rec.RunID] {
			g.told[rec.RunID] = true
			*problems = append(*problems, Problem{Pos: pos, RunID: rec.RunID, Msg: fmt.Sprintf(
				"run %s: %s and may be one of this run's, so its records from here on are left out", rec.RunID, lostText(at, pos))})
		}
		return false
	}
	if rec.Rec == KindEnd {
		delete(g.at, rec.RunID)
	} else {
		g.at[rec.RunID], _ = g.writerOf(f)
	}
	return true
}

// lostText says which line was lost, seen from the record at pos.
func lostText(at, pos Pos) string {
	switch {
	case at.Line == 0:
		return fmt.Sprintf("lines before the first of %s are missing (a file of its writer was removed, or the file's first lines)", at.File)
	case at.File != pos.File:
		return fmt.Sprintf("line %s could not be read (or is missing)", at)
	}
	return fmt.Sprintf("line %d could not be read (or is missing)", at.Line)
}
