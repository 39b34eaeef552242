package journal

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// Defaults of [journal].
const (
	DefaultMaxFileSize = 64 << 20
	DefaultMaxAge      = 30 * 24 * time.Hour
)

// Options configure a Writer.
type Options struct {
	Dir         string
	MaxFileSize int64         // rotate when a file reaches it (0: DefaultMaxFileSize)
	MaxAge      time.Duration // remove files older than it (0: DefaultMaxAge)
	Mask        []string
	Log         *slog.Logger
	Now         func() time.Time
	// Sink, when set, takes the lines instead of files in Dir (the
	// PostgreSQL store, [journal] kind = "postgres").
	Sink LineSink
	// LostTotal, when set, counts the records not written too: a host
	// that replaces its writer on a reload keeps one total over them.
	LostTotal *atomic.Int64
}

// maxQueued bounds the records waiting for the writer: past it, Record
// waits rather than drop one.
const maxQueued = 8192

// bufSize is how many bytes of lines the writer gathers before it writes
// them; a longer line is written by itself.
const bufSize = 64 << 10

// retryMin and retryMax bound how long the writer waits after a failed
// write before it tries a new file: a full disk is not cleaned up in
// milliseconds, and each try costs a file (removed if it stays empty).
const (
	retryMin = 100 * time.Millisecond
	retryMax = 30 * time.Second
)

// linger is how long the writer lets records gather after writing a
// batch: one wake-up and one write per batch, not per record, at the cost
// of reaching the file up to this much later.
const linger = time.Millisecond

// Writer appends records to the journal directory. Record queues the
// record for one goroutine that masks, encodes, chains, writes and
// rotates, in batches, so a run waits for neither the encoder nor the disk
// nor another run; the queue is bounded, and a full queue makes Record
// wait rather than drop a record. Close writes what is queued. A file is
// synced to disk, with its directory, when the writer is done with it
// (rotated, or at Close).
//
// A failed write (a full disk) does not end the journal: the lines that
// did not reach the file whole are dropped, and the records made until a
// retry is due (backing off from retryMin to retryMax); the retry starts
// a new file, so a torn line stays the last of its file. Every record not
// written is counted (Lost, Close's error) and logged: when the failures
// start, then at most once a minute, and with the count when writes
// succeed again.
//
// Because encoding happens later, the values a record references (maps,
// slices) must not change after Record returns: the runtime records the
// inputs a phase was given and its own copies, which nobody modifies in
// place.
type Writer struct {
	o    Options
	mask *Mask
	done chan struct{}

	mu       sync.Mutex
	notEmpty sync.Cond
	notFull  sync.Cond
	queue    []*Record
	closed   bool

	errMu sync.Mutex
	err   error        // the first write error, reported by Close
	lost  atomic.Int64 // records not written (see Lost)

	// owned by the goroutine
	f       *os.File
	out     []byte                // lines not yet written to f
	ends    []int                 // where each line of out ends, its newline included
	written int                   // lines of f that reached it whole
	size    int64                 // bytes of f, out included
	prevHex [2 * sha256.Size]byte // the previous line's sum, in hex
	sealer  sealer
	n       int // lines in the current file
	enc     []byte
	line    []byte
	seq     int // files opened
	// gap: records were lost since the current file (or the last one) was
	// opened; the next file's number skips one, which a reader takes for
	// a file missing there (see gaps), so that the runs in flight are not
	// driven on without the lost records.
	gap   bool
	spare []*Record
	// stream and batch: with a Sink, the writer's chain and the sealed
	// lines of the batch being written.
	stream   string
	batch    [][]byte
	sunk     int       // lines given to the sink since the last age-out
	sealedAt time.Time // when the stream's last line was sealed
	// With a Sink: refs names the record of each line of batch (the
	// marker's is empty), cur the record being written; lostRuns the runs
	// whose records were not written, which the next stream's first line
	// names (a KindLost record, the marker) until a batch holding it is
	// written; marked: batch holds it.
	refs     []LostRun
	cur      LostRun
	lostRuns map[string]LostRun
	marked   bool
	// down: a write failed, and records are dropped (and counted) until
	// retryAt, when a new file (or stream) is tried; closing: the last
	// batch, which is tried whatever retryAt says.
	down      bool
	downSince time.Time
	downLost  int64 // records lost since downSince
	retryAt   time.Time
	backoff   time.Duration
	lastLog   time.Time
	closing   bool

	slots sync.Pool // of *Slot (see Slot)

	// sync is (*os.File).Sync (tests watch it).
	sync func(*os.File) error
}

// Open makes the directory if needed, checks that a file can be made in
// it and ages out old files. Each process writes files of its own (it never
// appends to a file another one left, whose last line may be torn), made
// at its first record: a process that records nothing (dev, an idle
// sidecar) leaves no empty file behind.
func Open(o Options) (*Writer, error) {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	w := &Writer{o: o, mask: NewMask(o.Mask), done: make(chan struct{}), sync: (*os.File).Sync}
	w.notEmpty.L, w.notFull.L = &w.mu, &w.mu
	if o.Sink != nil {
		w.stream = streamName(o.Now())
		w.ageOut()
		go w.loop()
		return w, nil
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := probe(o.Dir); err != nil {
		return nil, err
	}
	w.ageOut()
	go w.loop()
	return w, nil
}

// probe makes and removes a file in dir: what the first record will need,
// so a directory that cannot take one fails Open, not a record later.
func probe(dir string) error {
	f, err := os.CreateTemp(dir, ".journal-probe-*")
	if err != nil {
		// Not err itself: it names the random file.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("journal: cannot make a file in %s: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Record queues rec, masked and encoded later (see Writer): it keeps rec,
// which the caller must not change afterwards.
func (w *Writer) Record(rec *Record) {
	cp := rec
	w.mu.Lock()
	for len(w.queue) >= maxQueued && !w.closed {
		w.notFull.Wait()
	}
	if !w.closed {
		w.queue = append(w.queue, cp)
		if len(w.queue) == 1 {
			w.notEmpty.Signal()
		}
	} else {
		// Closed under a run that still records (a reload moved the
		// journal between its reading the writer and calling this).
		w.count(1)
	}
	w.mu.Unlock()
}

// Close writes the queued records and closes the file. Its error is the
// first write error, with how many records were not written.
func (w *Writer) Close() error {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.notEmpty.Broadcast()
	w.notFull.Broadcast()
	w.mu.Unlock()
	if !already {
		<-w.done
	}
	return w.firstErr()
}

// Lost is how many records were not written since Open.
func (w *Writer) Lost() int64 { return w.lost.Load() }

// lose counts n records that were not written, for err.
func (w *Writer) lose(n int, err error) {
	w.count(n)
	w.keep(err)
}

// count counts n records not written, in Lost and LostTotal.
func (w *Writer) count(n int) {
	w.lost.Add(int64(n))
	if w.o.LostTotal != nil {
		w.o.LostTotal.Add(int64(n))
	}
}

// keep keeps err for Close when it is the first.
func (w *Writer) keep(err error) {
	w.errMu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.errMu.Unlock()
}

// firstErr is the first write error, with how many records were lost.
func (w *Writer) firstErr() error {
	w.errMu.Lock()
	err := w.err
	w.errMu.Unlock()
	if n := w.lost.Load(); err != nil && n > 0 {
		return fmt.Errorf("%w (%d records lost)", err, n)
	}
	return err
}

// note keeps err for Close when it is the first, and logs it: a failure
// that loses no record (closing a file whose lines were written).
func (w *Writer) note(err error) {
	w.keep(err)
	w.o.Log.Error("the journal could not sync or close a file", "error", err.Error())
}

// failed counts n records lost to err and stops writing until retryAt,
// backing off while the failures go on. The first failure of an outage
// is logged, then at most one a minute, and its end with the count (see
// recovered), so that no record is dropped silently nor the log flooded.
func (w *Writer) failed(err error, n int) {
	// The clock is read before the loss is counted: whoever watches Lost
	// then sees a retry time that the count came after.
	now := w.o.Now()
	w.lose(n, err)
	w.downLost += int64(n)
	w.gap = true
	w.closing = false // Close's one more try was this one
	if !w.down {
		w.down, w.downSince, w.backoff, w.lastLog = true, now, retryMin, now
		w.o.Log.Error("the journal cannot write; records are dropped, and counted, until a write succeeds on a new file",
			"error", err.Error(), "lost", n)
	} else {
		w.backoff = min(2*w.backoff, retryMax)
		if now.Sub(w.lastLog) >= time.Minute {
			w.lastLog = now
			w.o.Log.Error("the journal still cannot write", "error", err.Error(), "lost", w.downLost, "since", w.downSince.Format(time.RFC3339))
		}
	}
	w.retryAt = now.Add(w.backoff)
}

// waiting reports whether a record must be dropped rather than written:
// the last write failed and the next try is not due.
func (w *Writer) waiting() bool {
	return w.down && !w.closing && w.o.Now().Before(w.retryAt)
}

// drop counts a record not written while waiting.
func (w *Writer) drop() {
	w.count(1)
	w.downLost++
	w.gap = true
}

// recovered logs the end of an outage: a write succeeded again.
func (w *Writer) recovered(where string) {
	w.o.Log.Warn("the journal writes again", "lost", w.downLost, "since", w.downSince.Format(time.RFC3339), "to", where)
	w.down, w.downLost = false, 0
}

func (w *Writer) loop() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed {
			w.notEmpty.Wait()
		}
		batch, closed := w.queue, w.closed
		w.queue = w.spare[:0]
		w.notFull.Broadcast()
		w.mu.Unlock()
		w.closing = closed
		for i, rec := range batch {
			if w.encode(rec) {
				w.cur = LostRun{RunID: rec.RunID, Rec: rec.Rec, Save: rec.Save}
				w.write(w.enc)
			}
			recycle(rec)
			batch[i] = nil
		}
		w.spare = batch[:0]
		w.sink()
		w.flush()
		if closed && len(batch) == 0 {
			if len(w.lostRuns) > 0 {
				// Records were lost and no line came after: one more try
				// to name their runs, which other replicas may go on
				// recording.
				w.closing = true
				w.mark()
				w.sink()
			}
			break
		}
		if !closed {
			time.Sleep(linger)
		}
	}
	w.closeFile()
	if w.down {
		w.o.Log.Error("the journal closes unable to write", "lost", w.downLost, "since", w.downSince.Format(time.RFC3339))
	}
}

// sealSize is what sealing adds to a record's body (a prev and a sum, less
// the brace they follow); maxBody is the longest body whose line, with its
// newline, a reader takes (maxLine).
const (
	sealSize = len(sealHead) + 2*sha256.Size + len(sealMid) + 2*sha256.Size + len(sealTail) - 1
	maxBody  = maxLine - 1 - sealSize
)

// encode masks and encodes rec into w.enc. A record whose line would pass
// maxLine is shortened, since a line the reader refuses costs the audit
// more than part of one record: its input is left out, or, when that is
// not enough, all but its identity, and Omitted lists what was. A record
// too long even so (an identity field that long) is not written. Either is
// logged, once per record.
func (w *Writer) encode(rec *Record) bool {
	m := w.mask.apply(rec)
	w.enc = appendRecord(w.enc[:0], m)
	if len(w.enc) <= maxBody {
		return true
	}
	size := len(w.enc)
	cp := *m
	cp.slot, cp.Input, cp.Omitted = nil, nil, []string{"input"}
	w.enc = appendRecord(w.enc[:0], &cp)
	if len(w.enc) > maxBody {
		id := Record{Rec: m.Rec, Format: m.Format, RunID: m.RunID, ThreadID: m.ThreadID, Agent: m.Agent, Generation: m.Generation,
			ConfigHash: m.ConfigHash, TS: m.TS, Save: m.Save, Phase: m.Phase, Step: m.Step, Continued: m.Continued,
			Termination: m.Termination, Steps: m.Steps, Omitted: omittable(m)}
		w.enc = appendRecord(w.enc[:0], &id)
		cp = id
	}
	attrs := []any{"run_id", errs.Clip(m.RunID, 200), "rec", m.Rec, "phase", m.Phase, "step", m.Step, "bytes", size + sealSize + 1, "limit", maxLine}
	if len(w.enc) > maxBody {
		w.lose(1, errors.New("journal: a record too large for a reader was not written"))
		w.o.Log.Error("a journal record is too large for a reader even without its input and was not written", attrs...)
		// No gap for the reader (see Writer.gap): the identity that is
		// this long (a run id, a termination) is that of its run's later
		// records too, which are not written either.
		return false
	}
	w.o.Log.Warn("a journal record is too large for a reader; written without the fields listed in its \"omitted\"",
		append(attrs, "omitted", strings.Join(cp.Omitted, ","))...)
	return true
}

// omittable lists the fields of r, by their JSON names, that a record
// shortened to its identity leaves out.
func omittable(r *Record) []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"plugins", len(r.Plugins) > 0}, {"input", r.Input != nil}, {"decisions", len(r.Decisions) > 0},
		{"context", len(r.Context) > 0}, {"request", r.Request != nil}, {"failed", r.Failed != ""},
		{"expired", len(r.Expired) > 0}, {"masked", len(r.Masked) > 0}, {"shadow", r.Shadow != nil},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// sink hands the batch's lines to the Sink (and ages it out now and then).
// A batch the sink refuses is lost (and counted), and the next one starts a
// stream of its own, as a file does after a failed write, so that no chain
// names a line that is not there.
func (w *Writer) sink() {
	if w.o.Sink == nil || len(w.batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.o.Sink.WriteLines(ctx, w.stream, w.batch); err != nil {
		n := len(w.batch)
		if w.marked {
			n-- // the marker is not a record; its runs stay in lostRuns
		}
		for _, r := range w.refs {
			w.lostRun(r)
		}
		w.failed(fmt.Errorf("journal: %w", err), n)
		w.stream, w.n = streamName(w.o.Now()), 0
	} else {
		if w.marked {
			clear(w.lostRuns)
		}
		if w.down {
			w.recovered(w.stream)
		}
	}
	w.sunk += len(w.batch)
	w.batch, w.refs, w.marked = w.batch[:0], w.refs[:0], false
	if w.sunk > sinkRotate {
		// A new stream (and chain) every so often, as a file rotates,
		// so that a long-lived writer's old lines can age out whole.
		w.sunk = 0
		w.stream, w.n = streamName(w.o.Now()), 0
		w.ageOut()
	}
}

// sinkLine chains b to the previous line of the stream and adds it to the
// batch; ref names its record.
func (w *Writer) sinkLine(b []byte, ref LostRun) {
	var prev []byte
	if w.n > 0 {
		prev = w.prevHex[:]
	}
	line := w.sealer.seal(nil, prev, b) // the sink keeps it: its own slice
	at := len(sealHead) + len(prev) + len(sealMid)
	copy(w.prevHex[:], line[at:at+2*sha256.Size])
	w.batch = append(w.batch, line)
	w.refs = append(w.refs, ref)
	w.n++
	w.sealedAt = w.o.Now()
}

// lostRun notes that a record of r's run was not written: the next
// stream's first line names the run with its first record lost.
func (w *Writer) lostRun(r LostRun) {
	if r.RunID == "" || r.Rec == KindShadow {
		// The marker; or a shadow record, which replay does not drive:
		// it carries no save, and named as lost it would cut its run
		// from the run's first phase.
		return
	}
	if w.lostRuns == nil {
		w.lostRuns = map[string]LostRun{}
	}
	if have, ok := w.lostRuns[r.RunID]; !ok || have.before(r.Rec, r.Save) {
		w.lostRuns[r.RunID] = r
	}
}

// mark starts a new stream with the marker (a KindLost record naming the
// runs whose records were lost), when records were lost: a stream's chain
// cannot show what was lost between two streams, so a reader learns it
// from the marker (see Lines).
func (w *Writer) mark() {
	if w.n > 0 || len(w.lostRuns) == 0 {
		return
	}
	rec := Record{Rec: KindLost, Lost: make([]LostRun, 0, len(w.lostRuns))}
	for _, r := range w.lostRuns {
		rec.Lost = append(rec.Lost, r)
	}
	sort.Slice(rec.Lost, func(i, j int) bool { return rec.Lost[i].RunID < rec.Lost[j].RunID })
	w.sinkLine(appendRecord(nil, &rec), LostRun{})
	w.marked = true
}

// sinkRotate is how many lines a writer gives one stream of a Sink before
// it starts another.
const sinkRotate = 100000

// write chains b to the previous line and appends it. After a failed
// write, records are dropped (and counted) until the retry is due; then a
// new file is started, and with it a new chain.
func (w *Writer) write(b []byte) {
	if w.o.Sink != nil {
		if w.waiting() {
			w.drop()
			w.lostRun(w.cur)
			return
		}
		if now := w.o.Now(); len(w.batch) == 0 && w.n > 0 && now.Sub(w.sealedAt) >= w.o.MaxAge/2 {
			// Idle this long, the stream may be aged out (by another
			// replica: AgeOut removes streams, not this writer's lines)
			// before this line is written, and a line chained to a
			// removed one reads as tampering: a new stream. Half of
			// MaxAge leaves room for the database's clock.
			w.stream, w.n = streamName(now), 0
		}
		w.mark()
		w.sinkLine(b, w.cur)
		return
	}
	if len(w.out) > 0 && len(w.out)+len(b)+sealSize+1 > bufSize {
		w.flush()
	}
	if w.f == nil {
		// The first record, one after a rotation, or after a failed write.
		if w.waiting() {
			w.drop()
			return
		}
		if err := w.open(); err != nil {
			w.failed(err, 1)
			return
		}
	}
	var prev []byte
	if w.n > 0 {
		prev = w.prevHex[:]
	}
	w.line = w.sealer.seal(w.line[:0], prev, b)
	at := len(sealHead) + len(prev) + len(sealMid)
	copy(w.prevHex[:], w.line[at:at+2*sha256.Size])
	w.line = append(w.line, '\n')
	w.n++
	w.size += int64(len(w.line))
	if len(w.line) > bufSize {
		w.put(w.line, []int{len(w.line)}) // not copied into out
	} else {
		w.out = append(w.out, w.line...)
		w.ends = append(w.ends, len(w.out))
	}
	if w.f != nil && w.size >= w.o.MaxFileSize {
		w.closeFile()
		w.ageOut()
	}
}

// flush writes the gathered lines.
func (w *Writer) flush() {
	if w.f != nil && len(w.out) > 0 {
		w.put(w.out, w.ends)
	}
	w.out, w.ends = w.out[:0], w.ends[:0]
}

// put writes p, whose lines end at ends, to the file. When the write
// fails the file is given up, and the lines that did not reach it whole
// are counted lost: a torn line stays the last line of its file, which a
// reader reports and skips, and the next record starts a new file (and
// chain), since appending after a torn line would corrupt the next line.
func (w *Writer) put(p []byte, ends []int) {
	n, err := w.f.Write(p)
	kept := sort.SearchInts(ends, n+1) // the lines that ended within n
	w.written += kept
	if err == nil {
		if w.down {
			w.recovered(w.f.Name())
		}
		return
	}
	w.f.Close()
	if w.written == 0 {
		// Nothing readable reached it: retries on a disk that stays full
		// leave no files behind.
		os.Remove(w.f.Name())
	}
	w.f = nil
	w.out, w.ends = w.out[:0], w.ends[:0]
	w.failed(fmt.Errorf("journal: %w", err), len(ends)-kept)
}

// closeFile writes the gathered lines, syncs the file and its directory
// and closes the file; the next record starts a new one. Synced before the
// next file is made (or the process ends), a file keeps its lines through
// a power loss: only the file being written can lose some, and a reader
// finds that by its chain, or by its number when it is lost whole.
func (w *Writer) closeFile() {
	w.flush()
	if w.f == nil {
		return
	}
	if err := w.sync(w.f); err != nil {
		w.note(fmt.Errorf("journal: %w", err))
	} else if err := w.syncDir(); err != nil {
		w.note(fmt.Errorf("journal: %w", err))
	}
	if err := w.f.Close(); err != nil {
		w.note(fmt.Errorf("journal: %w", err))
	}
	w.f = nil
}

// syncDir syncs the journal directory, so that the files made in it
// survive a power loss too. Windows cannot sync a directory opened this
// way: there a file's name is as durable as the file system makes it.
func (w *Writer) syncDir() error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(w.o.Dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return w.sync(d)
}

// open starts the next file.
func (w *Writer) open() error {
	w.seq++
	if w.gap {
		w.seq++
		w.gap = false
	}
	name := fmt.Sprintf("journal-%s-%d-%04d.ndjson", w.o.Now().UTC().Format("20060102T150405.000Z"), os.Getpid(), w.seq)
	f, err := os.OpenFile(filepath.Join(w.o.Dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	w.f, w.size, w.n, w.written = f, 0, 0, 0
	return nil
}

// ageOut removes journal files last written before MaxAge (or has the
// Sink remove its older lines).
func (w *Writer) ageOut() {
	if w.o.Sink != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.o.Sink.AgeOut(ctx, w.o.Now().Add(-w.o.MaxAge)); err != nil {
			w.o.Log.Warn("cannot age out the journal", "error", err.Error())
		}
		return
	}
	files, err := Files(w.o.Dir)
	if err != nil {
		return
	}
	cut := w.o.Now().Add(-w.o.MaxAge)
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.ModTime().Before(cut) {
			if err := os.Remove(f); err == nil {
				w.o.Log.Info("journal file aged out", "file", f)
			}
		}
	}
}

// Files lists the journal files of a directory, oldest first.
func Files(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasPrefix(e.Name(), "journal-") && strings.HasSuffix(e.Name(), ".ndjson") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}
