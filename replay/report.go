package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/run"
)

// Report is what a replay of a journal found.
type Report struct {
	Runs     int               `json:"runs"`    // runs whose start was in the journal
	RunIDs   []string          `json:"run_ids"` // those runs, in the order they started
	Steps    int               `json:"steps"`   // steps replayed
	Phases   int               `json:"phases"`
	Flips    []journal.Flip    `json:"flips"`
	Problems []journal.Problem `json:"-"`       // lines not read; records the writer shortened, where their run stops
	Skipped  int               `json:"skipped"` // phase records of runs whose start is not in the journal
}

// Options narrow a replay.
type Options struct {
	// Since skips runs that started before it.
	Since time.Time
}

// Run replays every run of the journal files (or directories) through the
// candidate runtime.
func Run(ctx context.Context, candidate *run.Runtime, paths []string, o Options) (*Report, error) {
	return RunSource(ctx, candidate, journal.FileSource(paths...), o)
}

// RunSource is Run on any journal Source (files, or the PostgreSQL store).
func RunSource(ctx context.Context, candidate *run.Runtime, src journal.Source, o Options) (*Report, error) {
	r, err := New(candidate)
	if err != nil {
		return nil, err
	}
	rep := &Report{Flips: []journal.Flip{}, RunIDs: []string{}}
	// skip holds the runs --since leaves out, also past their end: journals
	// written before end was a run's last record have a phase after it.
	skip := map[string]bool{}
	// ended holds the runs whose end was read: in such a journal a run
	// that flipped before its end is forgotten there, and its trailing
	// phase is not one whose start is missing.
	ended := map[string]bool{}
	var shortened []journal.Problem
	problems, err := src(func(pos journal.Pos, rec *journal.Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch rec.Rec {
		case journal.KindRun:
			if !o.Since.IsZero() && rec.TS.Before(o.Since) {
				skip[rec.RunID] = true
				return nil
			}
			rep.Runs++
			rep.RunIDs = append(rep.RunIDs, rec.RunID)
		case journal.KindEnd:
			ended[rec.RunID] = true
		case journal.KindPhase:
			if skip[rec.RunID] {
				return nil
			}
			r.mu.Lock()
			st := r.runs[rec.RunID]
			r.mu.Unlock()
			if st == nil {
				if !ended[rec.RunID] {
					rep.Skipped++
				}
				return nil
			}
			if st.done {
				return nil
			}
			ok, stop := r.admit(st, rec)
			if stop != "" {
				shortened = append(shortened, journal.Problem{Pos: pos, Msg: fmt.Sprintf(
					"run %s step %d %s: %s; the run is not replayed from here", rec.RunID, rec.Step, rec.Phase, stop)})
			}
			if !ok {
				return nil
			}
			rep.Phases++
			if rec.Phase == journal.StepStart {
				rep.Steps++
			}
			flip, err := r.follow(ctx, st, rec)
			if err == nil && flip != nil {
				rep.Flips = append(rep.Flips, *flip)
			}
			return err
		}
		flip, err := r.Apply(ctx, rec)
		if err != nil {
			return err
		}
		if flip != nil {
			rep.Flips = append(rep.Flips, *flip)
		}
		return nil
	})
	rep.Problems = append(problems, shortened...)
	return rep, err
}

// Count is how many flips of one kind one plugin caused.
type Count struct {
	Kind   string `json:"kind"`
	Plugin string `json:"plugin,omitempty"`
	N      int    `json:"n"`
}

// ByKind counts the flips by kind, most first (masked-field reads are
// not flips and are left out).
func (r *Report) ByKind() []Count {
	return r.count(func(f journal.Flip) string { return f.Kind }, false)
}

// ByPlugin counts the flips by kind and plugin.
func (r *Report) ByPlugin() []Count {
	return r.count(func(f journal.Flip) string { return f.Kind }, true)
}

func (r *Report) count(key func(journal.Flip) string, byPlugin bool) []Count {
	idx := map[Count]int{}
	for _, f := range r.Flips {
		if f.Kind == ReadsMasked {
			continue
		}
		c := Count{Kind: key(f)}
		if byPlugin {
			c.Plugin = f.Plugin
		}
		idx[c]++
	}
	out := make([]Count, 0, len(idx))
	for c, n := range idx {
		c.N = n
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Plugin < out[j].Plugin
	})
	return out
}

// Masked lists the decisions replay could not compare because the
// candidate reads a field the journal masks.
func (r *Report) Masked() []journal.Flip {
	var out []journal.Flip
	for _, f := range r.Flips {
		if f.Kind == ReadsMasked {
			out = append(out, f)
		}
	}
	return out
}

// Fails reports whether the replay should fail a CI gate: any flip, or
// with failOn only flips of those kinds ("allow->block", "context
// changed", ...).
func (r *Report) Fails(failOn []string) bool {
	for _, f := range r.Flips {
		if f.Kind == ReadsMasked {
			continue
		}
		if len(failOn) == 0 {
			return true
		}
		for _, k := range failOn {
			if strings.TrimSpace(k) == f.Kind {
				return true
			}
		}
	}
	return false
}

// gateKinds are the decisions a gate flip goes from and to (a rewrite is
// applied as allow; a changed rewrite is RewriteChanged).
var gateKinds = []gate.Kind{gate.Allow, gate.Block, gate.Suspend, gate.SetResult}

// namedKinds are the flip kinds that are not gate decisions.
var namedKinds = []string{RewriteChanged, ContextChanged, RequestChanged, TerminationChanged, ContinueChanged, Failed}

// Kinds lists every flip kind, as --fail-on names them.
func Kinds() []string {
	var out []string
	for _, a := range gateKinds {
		for _, b := range gateKinds {
			if a != b {
				out = append(out, a.String()+"->"+b.String())
			}
		}
	}
	for _, a := range gateKinds {
		out = append(out, a.String()+byAnother)
	}
	return append(out, namedKinds...)
}

// CheckKinds reports the first of kinds (as Fails takes them) that is not
// a flip kind: a gate on a misspelt kind would never fail.
func CheckKinds(kinds []string) error {
	known := Kinds()
	for _, k := range kinds {
		k = strings.TrimSpace(k)
		switch {
		case k == "":
			return fmt.Errorf("an empty kind; name the flip kinds to fail on, comma-separated, such as allow->block,context changed")
		case k == ReadsMasked:
			return fmt.Errorf("%q is not a flip: replay reports decisions that read masked fields apart and never fails on them", k)
		case !slices.Contains(known, k):
			names := make([]string, len(gateKinds))
			for i, g := range gateKinds {
				names[i] = g.String()
			}
			return fmt.Errorf("%q is not a flip kind%s. The kinds: FROM->TO and \"KIND%s\" (FROM, TO, KIND: %s), %s",
				k, errs.DidYouMean(k, known), byAnother, strings.Join(names, ", "), strings.Join(namedKinds, ", "))
		}
	}
	return nil
}

// Summary is the one-line result, as dev prints it.
func (r *Report) Summary() string {
	n := len(r.Flips) - len(r.Masked())
	return "replay " + plural(r.Runs, "run", "runs") + ": " + plural(n, "flip", "flips")
}

// WriteText prints the report for a person: the flips by kind, then by
// plugin, one sample per kind, and the totals.
func (r *Report) WriteText(w io.Writer) {
	for _, p := range r.Problems {
		fmt.Fprintf(w, "warning: %s\n", p)
	}
	kinds := r.ByKind()
	if len(kinds) == 0 {
		fmt.Fprintf(w, "no flips: %s replayed\n", r.totals())
	} else {
		var parts []string
		for _, c := range kinds {
			parts = append(parts, fmt.Sprintf("%s %d", c.Kind, c.N))
		}
		fmt.Fprintln(w, strings.Join(parts, " · "))
		fmt.Fprintln(w, "\nby plugin:")
		for _, c := range r.ByPlugin() {
			fmt.Fprintf(w, "  %-24s %-22s %d\n", orNone(c.Plugin), c.Kind, c.N)
		}
		fmt.Fprintln(w, "\nsamples:")
		seen := map[string]bool{}
		for _, f := range r.Flips {
			if f.Kind == ReadsMasked || seen[f.Kind] {
				continue
			}
			seen[f.Kind] = true
			writeFlip(w, f)
		}
	}
	if m := r.Masked(); len(m) > 0 {
		head := fmt.Sprintf("%d decisions read masked fields (not counted as flips)", len(m))
		if len(m) == 1 {
			head = "1 decision reads a masked field (not counted as a flip)"
		}
		fmt.Fprintf(w, "\n%s:\n", head)
		writeFlip(w, m[0])
	}
	if len(kinds) > 0 {
		fmt.Fprintf(w, "\n%s in %s replayed\n", plural(len(r.Flips)-len(r.Masked()), "flip", "flips"), r.totals())
	}
	switch {
	case r.Skipped == 1:
		fmt.Fprintln(w, "1 phase record skipped: its run's start is not in the journal (aged out or in another file)")
	case r.Skipped > 1:
		fmt.Fprintf(w, "%d phase records skipped: their run's start is not in the journal (aged out or in another file)\n", r.Skipped)
	}
}

// totals is "N runs, N steps, N phases".
func (r *Report) totals() string {
	return plural(r.Runs, "run", "runs") + ", " + plural(r.Steps, "step", "steps") + ", " + plural(r.Phases, "phase", "phases")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func writeFlip(w io.Writer, f journal.Flip) {
	fmt.Fprintf(w, "  %s: run %s step %d %s", f.Kind, f.RunID, f.Step, f.Phase)
	if f.CallID != "" {
		args, _ := json.Marshal(f.Args)
		fmt.Fprintf(w, " call %s %s %s", f.CallID, f.Tool, args)
	}
	fmt.Fprintf(w, "\n    was: %s\n    now: %s\n", f.From, f.To)
	if f.Detail != "" {
		fmt.Fprintf(w, "    (%s)\n", f.Detail)
	}
}
