package journal

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// LineSink keeps sealed journal lines elsewhere than in files (the
// PostgreSQL store): a Writer with a sink hands it each batch. A stream is
// one writer's chain of lines, as a file is.
type LineSink interface {
	WriteLines(ctx context.Context, stream string, lines [][]byte) error
	// AgeOut removes the streams whose last line was written before the
	// time, whole: removing a stream's first lines would break its chain
	// (verify would call it tampered), so a writer starts a new stream
	// now and then (see Writer) for its old ones to age out.
	AgeOut(ctx context.Context, before time.Time) error
}

// Line is a journal line from a LineSource: the stream it belongs to and
// its place in that stream (1-based).
type Line struct {
	Stream string
	N      int
	Data   []byte
}

// Source calls fn for each record of a journal, in order, and reports the
// lines it skipped (see Read).
type Source func(fn func(Pos, *Record) error) ([]Problem, error)

// FileSource is the Source of journal files or directories (see Read).
func FileSource(paths ...string) Source {
	return func(fn func(Pos, *Record) error) ([]Problem, error) { return Read(paths, fn) }
}

// Lines is the Source of lines read from a LineSink's store: each calls
// yield for each line in the order written, streams interleaved. Several
// replicas write one run's phases to their own streams, each in batches,
// so arrival order is not the run's order: the records are grouped by run
// (runs in the order their headers came) and each run's put in the order
// of its saves (Record.Save), arrival order within a save. This holds the
// journal in memory; narrow it with since.
//
// A writer that could not write some records goes on in a new stream,
// whose first line (a KindLost record) names their runs: each such run's
// records from its first lost one on are left out, with a Problem, since
// replayed with a phase missing it would show flips the candidate did not
// make.
func Lines(each func(yield func(Line) error) error) Source {
	return func(fn func(Pos, *Record) error) ([]Problem, error) {
		type item struct {
			pos Pos
			rec *Record
		}
		var problems []Problem
		var order []string
		runs := map[string][]item{}
		type cut struct {
			from LostRun
			pos  Pos
		}
		cuts := map[string]cut{}
		g := newGaps(false) // each stream is read in the order written
		err := each(func(l Line) error {
			pos := Pos{File: l.Stream, Line: l.N}
			rec := new(Record)
			if err := json.Unmarshal(l.Data, rec); err != nil {
				problems = append(problems, Problem{Pos: pos, Msg: "not a journal record: " + err.Error()})
				g.lost(pos)
				return nil
			}
			if rec.Rec == KindRun && rec.Format != Format {
				return errs.New(errs.JournalInvalid, "%s: the journal has format %d and this awaken-lua reads format %d; use the awaken-lua version that wrote it",
					pos, rec.Format, Format)
			}
			if !g.admit(pos, rec, &problems) {
				return nil
			}
			if rec.Rec == KindLost {
				for _, l := range rec.Lost {
					if c, ok := cuts[l.RunID]; !ok || c.from.before(l.Rec, l.Save) {
						cuts[l.RunID] = cut{l, pos}
					}
				}
				return nil
			}
			if _, seen := runs[rec.RunID]; !seen {
				order = append(order, rec.RunID)
			}
			runs[rec.RunID] = append(runs[rec.RunID], item{pos, rec})
			return nil
		})
		if err != nil {
			return problems, err
		}
		for _, id := range order {
			list := runs[id]
			sort.SliceStable(list, func(i, j int) bool {
				a, b := list[i].rec, list[j].rec
				if rank(a.Rec) != rank(b.Rec) {
					return rank(a.Rec) < rank(b.Rec)
				}
				return a.Save < b.Save
			})
			if c, ok := cuts[id]; ok {
				kept := 0
				for kept < len(list) && c.from.before(list[kept].rec.Rec, list[kept].rec.Save) {
					kept++
				}
				list = list[:kept]
				problems = append(problems, Problem{Pos: c.pos, RunID: id, Msg: fmt.Sprintf(
					"run %s: its writer could not write its %s and went on in a new stream, so its records from there on are left out",
					id, lostWhat(c.from))})
			}
			for _, it := range list {
				if err := fn(it.pos, it.rec); err != nil {
					return problems, err
				}
			}
		}
		return problems, nil
	}
}

// VerifyLines checks the chains of lines read from a LineSink's store, as
// Verify checks files: each stream is a chain.
func VerifyLines(each func(yield func(Line) error) error) (int, error) {
	want := map[string]string{}
	seen := map[string]bool{}
	n := 0
	err := each(func(l Line) error {
		pos := Pos{File: l.Stream, Line: l.N}
		prev, sum, err := unseal(l.Data)
		if err != nil {
			return errs.New(errs.JournalTampered, "%s: %v", pos, err)
		}
		switch w := want[l.Stream]; {
		case !seen[l.Stream] && prev != "":
			return errs.New(errs.JournalTampered, "%s: the first line of the stream names a previous line: lines before it were removed", pos)
		case seen[l.Stream] && prev != w:
			return errs.New(errs.JournalTampered, "%s: prev does not match the line before it: lines were removed, added or reordered before this one", pos)
		}
		seen[l.Stream], want[l.Stream] = true, sum
		n++
		return nil
	})
	return n, err
}

// streamName names a writer's stream: the host, the process and when it
// started, so replicas never share a chain.
func streamName(now time.Time) string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%s-%s-%x", host, strconv.Itoa(os.Getpid()), now.UTC().Format("20060102T150405.000Z"), b)
}

// lostWhat names a run's first lost record.
func lostWhat(l LostRun) string {
	switch l.Rec {
	case KindRun:
		return "header"
	case KindEnd:
		return "end record"
	}
	return fmt.Sprintf("phase record of save %d", l.Save)
}
