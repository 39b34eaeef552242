package host

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/run"
)

// journalSink is the host's decision journal: the [journal] writer, which
// a reload may move, and the tap (a shadow generation). Every generation's
// runtime records into it.
type journalSink struct {
	tap run.Recorder
	log *slog.Logger

	mu  sync.RWMutex
	key string // the options the writer was opened with
	w   *journal.Writer
	// lost counts the records every writer the sink opened did not write
	// (journal.Options.LostTotal): one a reload replaced counts on while
	// it drains.
	lost atomic.Int64
}

// JournalLost is how many journal records were not written (a full disk,
// a record too large even without its input) since the host opened.
func (h *Host) JournalLost() int64 { return h.journal.lost.Load() }

// option is the runtime option that records into the sink, or none when
// nothing would see the records.
func (j *journalSink) option(hash string, on bool) run.Option {
	return func(r *run.Runtime) error {
		if !on {
			return nil
		}
		return run.WithJournal(j, hash)(r)
	}
}

// Journal returns the host's journal: a record given to it is written to
// [journal] (if on) and handed to Options.Tap.
func (h *Host) Journal() run.Recorder { return h.journal }

// Record writes rec to the journal and hands it to the tap.
func (j *journalSink) Record(rec *journal.Record) {
	// The tap reads rec first: the writer recycles it once written.
	if j.tap != nil {
		j.tap.Record(rec)
	}
	// Held until the writer has rec: a reload swaps the writer under the
	// write lock and closes the old one only then, which would otherwise
	// count rec lost had it read the old writer just before.
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.w != nil {
		j.w.Record(rec)
	}
}

// Slot hands out a slot of the writer, which recycles it (journal.Slots).
func (j *journalSink) Slot() *journal.Slot {
	j.mu.RLock()
	w := j.w
	j.mu.RUnlock()
	if w != nil {
		return w.Slot()
	}
	return journal.NewSlot()
}

// prepare opens the configured journal for a build when [journal]
// changed, leaving the current one in place: swap makes it current (and
// closes the old writer) once the build succeeded, drop closes it when
// the build failed, so a generation that stays current goes on recording
// to the journal it had. on says whether the build's runtime records.
func (j *journalSink) prepare(cfg *config.Config, store run.Store) (swap, drop func(), on bool, err error) {
	jc := cfg.Journal
	o := journal.Options{Dir: cfg.Path(jc.Path), MaxFileSize: int64(jc.MaxFileSize), MaxAge: time.Duration(jc.MaxAge),
		Mask: jc.Mask, Log: j.log, LostTotal: &j.lost}
	key := ""
	if jc.Kind == config.JournalPostgres {
		sink, ok := store.(journal.LineSink)
		if !ok {
			return nil, nil, false, errs.New(errs.ConfigInvalid, "[journal] kind = \"postgres\" needs the PostgreSQL store ([store] kind = \"postgres\")").
				At(cfg.Pos("journal", "kind"))
		}
		o.Sink, o.Dir = sink, ""
		key = "postgres|" + fmtKey(o)
	} else if jc.Path != "" {
		key = fmtKey(o)
	}
	j.mu.RLock()
	same, tap := key == j.key, j.tap != nil
	on = j.w != nil || tap
	j.mu.RUnlock()
	if same {
		return func() {}, func() {}, on, nil
	}
	var w *journal.Writer
	if key != "" {
		if w, err = journal.Open(o); err != nil {
			return nil, nil, false, journalError(cfg, err)
		}
	}
	swap = func() {
		j.mu.Lock()
		old := j.w
		j.w, j.key = w, key
		j.mu.Unlock()
		if old != nil {
			old.Close()
		}
	}
	drop = func() {
		if w != nil {
			w.Close()
		}
	}
	return swap, drop, w != nil || tap, nil
}

func fmtKey(o journal.Options) string {
	return fmt.Sprintf("%s|%d|%s|%q", o.Dir, o.MaxFileSize, o.MaxAge, o.Mask)
}

func (j *journalSink) close() error {
	j.mu.Lock()
	w := j.w
	j.w, j.key = nil, ""
	j.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.Close()
}
