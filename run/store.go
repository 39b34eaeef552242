package run

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// Thread is what a thread keeps across runs: its thread-scoped state, its
// conversation, values kept aside because they no longer fit a changed
// schema, and the id of a run waiting for decisions.
type Thread struct {
	ID       string          `json:"id"`
	Values   map[string]any  `json:"values"`
	Messages []model.Message `json:"messages,omitempty"`
	// Aside holds values that did not fit their key's schema when a run
	// loaded them: reported, kept, and not used.
	Aside map[string]any `json:"aside,omitempty"`
	// Waiting is the id of the run that waits for decisions, if any.
	Waiting string `json:"waiting,omitempty"`
	// SavedBy is the id of the run that saved the thread last.
	SavedBy string `json:"saved_by,omitempty"`
	// Revision counts saves; PutThread compares it (compare-and-swap).
	Revision uint64 `json:"revision"`
}

// CallRecord is one tool call of the current step, as a checkpoint keeps it.
type CallRecord struct {
	Call model.ToolCall `json:"call"`
	// Sent are the call's arguments as the model (or the agent) sent them,
	// kept once the gate replaced them in Call (a rewrite, a decision
	// passed to the tool): a host's retry of the call sends these.
	Sent    map[string]any    `json:"sent,omitempty"`
	Status  CallStatus        `json:"status"`
	Gate    *GateRecord       `json:"gate,omitempty"`
	Result  *model.ToolResult `json:"result,omitempty"`
	Resume  *ResumeRecord     `json:"resume,omitempty"`
	Started bool              `json:"started,omitempty"`
	// Ran is what a plugin's tool answered when the runtime ran it for a
	// host (RunPluginTool), kept so a retry gets it again.
	Ran *model.ToolResult `json:"ran,omitempty"`
	// Expired: the call's ticket expired and the runtime decided for it
	// (ticket.on_timeout), not a human.
	Expired bool `json:"expired,omitempty"`
}

// SentArgs are the call's arguments as they were sent: Sent when the gate
// replaced them, else Call.Args.
func (c CallRecord) SentArgs() map[string]any {
	if c.Sent != nil {
		return c.Sent
	}
	return c.Call.Args
}

// Checkpoint is a run as a store keeps it: enough to continue it in another
// process, under the same or a newer plugin generation.
type Checkpoint struct {
	RunID      string `json:"run_id"`
	ThreadID   string `json:"thread_id"`
	AgentID    string `json:"agent_id"`
	Generation string `json:"generation"`
	// Bundle is the published plugin bundle the run's generation was
	// loaded from ("" for a local plugin directory): a replica restoring
	// the run loads that bundle if its own generation is another.
	Bundle      string `json:"bundle,omitempty"`
	Status      Status `json:"status"`
	Stage       Stage  `json:"stage"`
	Step        int    `json:"step"`
	Termination string `json:"termination,omitempty"`
	Natural     bool   `json:"natural,omitempty"`
	// Cwd is the working directory the agent last reported (Session.SetCwd);
	// absent in a checkpoint written before it was kept.
	Cwd string `json:"cwd,omitempty"`
	// Values are the run-scoped values.
	Values map[string]any `json:"values"`
	// ThreadValues are the thread-scoped values as the run has them (null
	// for a declared key it has not set): its calls' writes reach the
	// thread only when it waits or ends, so a run restored after a crash
	// or a restart continues from these. Absent in a checkpoint written
	// before they were kept.
	ThreadValues map[string]any `json:"thread_values"`
	// ThreadRevision is the revision of the thread the run builds on: its
	// next save of the thread expects it, unless this run saved the thread
	// since (see RestoreCheckpoint).
	ThreadRevision uint64          `json:"thread_revision,omitempty"`
	Messages       []model.Message `json:"messages"`
	// Offered are the tools offered in the step: null for every tool, []
	// for none (which omitempty would turn into every tool).
	Offered []string `json:"offered"`
	// Tools are the host's tools (StartOptions.Tools).
	Tools []model.ToolSpec `json:"tools,omitempty"`
	// StepTools are the step's tools, which hooks read (ctx.tools) from
	// before_inference's transforms to step_end, when they are not the
	// host tools that Offered names (see derivedStepTools): a restored run
	// must decide as the saved one would. Absent in a checkpoint written
	// before they were kept, which restores that guess.
	StepTools []StepTool   `json:"step_tools,omitempty"`
	Calls     []CallRecord `json:"calls,omitempty"`
	Revision  uint64       `json:"revision"`
	// Seq counts the run's saves: a Delta applies on the checkpoint whose
	// Seq is its Base (see RunLog).
	Seq uint64 `json:"seq,omitempty"`
}

// Store keeps threads and runs between runs and across restarts. The memory
// store lives in this package; durable ones implement the same interface.
// Implementations must be safe for concurrent use.
type Store interface {
	// Thread returns a copy of the thread, and false if it does not exist.
	Thread(ctx context.Context, id string) (Thread, bool, error)
	// PutThread saves t if the stored revision is still t.Revision (0 for a
	// new thread), and returns the new revision; a stale revision is
	// revision_conflict and nothing is saved.
	PutThread(ctx context.Context, t Thread) (uint64, error)
	// Run returns a saved run.
	Run(ctx context.Context, id string) (Checkpoint, bool, error)
	// PutRun saves a run, replacing an earlier save.
	PutRun(ctx context.Context, cp Checkpoint) error
	// DeleteRun forgets a run.
	DeleteRun(ctx context.Context, id string) error
}

// OutcomeUnknown reports whether err is a save its store cannot tell the
// outcome of (its connection was lost after the save was sent, and the
// store could not find out since): unlike other failures, it may have
// been kept. A store marks such an error with a method OutcomeUnknown
// that returns true.
func OutcomeUnknown(err error) bool {
	var u interface{ OutcomeUnknown() bool }
	return errors.As(err, &u) && u.OutcomeUnknown()
}

// Prober is a Store that can tell whether a save would succeed now,
// without changing what it keeps. A sidecar's readiness asks it while the
// store fails, so it recovers by itself once the store can write again.
type Prober interface {
	Probe(ctx context.Context) error
}

// Shared is a Store other processes write too (several sidecar replicas
// on one database). A process holding a run in memory must check, before it
// continues the run, that its copy is still the latest saved: RunSeq gives
// the stored run's save count (Checkpoint.Seq; Session.Saves for the copy
// in memory), and false once the run is no longer stored.
type Shared interface {
	RunSeq(ctx context.Context, id string) (uint64, bool, error)
}

// SeqDeleter is a Shared store that forgets a run only while it is at the
// save a process holds (Checkpoint.Seq; Session.Saves), or not stored; at
// another save it forgets nothing and answers revision_conflict. A delete
// decided on a copy that another replica has saved past since (a running
// run it made wait on an approval) is refused rather than forgetting
// what that replica's client was told.
type SeqDeleter interface {
	DeleteRunAt(ctx context.Context, id string, seq uint64) error
}

// Finisher is a store that ends a run in one step: it writes the run's
// thread (compared on its revision, as PutThread) and forgets the run,
// only while the run is still at its save seq (or, seq 0, never saved).
// Replicas sharing it cannot then both commit on one save: one ending the
// run, the other saving an approval of it or deleting it.
type Finisher interface {
	FinishRun(ctx context.Context, t Thread, runID string, seq uint64) (uint64, error)
}

// ExpiryLister is a durable store that one process uses (not Shared) and
// can list its waiting runs whose approval expires: run id -> when the
// first of its tickets expires. A sidecar that starts on it notes them
// (Server.NoteStoredExpiries), so it settles expired approvals of runs it
// has not loaded since the restart.
type ExpiryLister interface {
	WaitingExpiries(ctx context.Context) (map[string]time.Time, error)
}

// ExpiryClaimer is a Shared store that tells which waiting runs have an
// approval past its expiry, claiming each for one process for lease, so
// that exactly one replica settles it (and another one does if that one
// dies before saving it).
type ExpiryClaimer interface {
	ClaimExpired(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]string, error)
}

// Volatile is a Store that may keep nothing across a restart: Volatile
// reports whether it does. A sidecar over a volatile store checkpoints a
// run only when it leaves memory, since a copy per call would buy nothing;
// a store without the method is durable, and saved after every call.
type Volatile interface {
	Volatile() bool
}

// SetAsider is a Store that sets a corrupt run aside rather than dropping
// it (then Run reports the run as missing), and can tell where it went, so
// an error about the lost run can name the file (Start on a thread that
// waited on it).
type SetAsider interface {
	// SetAsideRun returns where run id's corrupt checkpoint was set
	// aside, and false if it never was.
	SetAsideRun(ctx context.Context, id string) (string, bool, error)
}

// Kinded is a store that names its kind, as [store] kind does ("memory",
// "file", "postgres"), for the reports a host makes.
type Kinded interface {
	Kind() string
}

// DefaultMaxThreads is how many threads a MemoryStore keeps unless
// WithMaxThreads says otherwise ([store] max_threads).
const DefaultMaxThreads = 10000

// MemoryStore is a Store in memory. It keeps at most a bounded number of
// threads (DefaultMaxThreads, or WithMaxThreads): a sidecar makes a thread
// per client session, and a store that never forgot one would grow for as
// long as the process lives. When a save would exceed the bound, the least
// recently used thread is evicted; reading a thread (Thread) or saving it
// (PutThread) counts as a use. An evicted thread is simply gone: the next
// run on its id starts with fresh thread-scoped state and no conversation,
// as after a restart with the memory store.
//
// Some threads are never evicted, because dropping them would lose a
// decision or a run: a thread whose Waiting names a run (someone is to
// decide on it), and a thread that has a saved run (PutRun; a sidecar
// parks an idle run there). Such a thread becomes evictable again once it
// stops waiting and its runs are deleted. If every thread is pinned that
// way, the store keeps them all and exceeds its bound rather than drop one.
// Saved runs are never evicted: they are deleted when they end (DeleteRun),
// and the sidecar forgets abandoned ones.
//
// A run whose thread is evicted while it runs gets revision_conflict when it
// saves, as any stale write does: see PutThread.
type MemoryStore struct {
	mu      sync.Mutex
	max     int
	threads map[string]*memThread
	lru     *list.List // the evictable threads (*memThread: a pointer boxes for free), most recently used first
	runs    map[string]Checkpoint
	saved   map[string]int // thread id → how many saved runs name it
	clock   uint64         // the last revision handed out, to any thread
}

// MemoryStoreOption configures NewMemoryStore. (It is an option of the
// store, not of New: pass the store to New with WithStore.)
type MemoryStoreOption func(*MemoryStore)

// WithMaxThreads bounds the threads a MemoryStore keeps to n; n <= 0 means
// DefaultMaxThreads. There is no unbounded setting, since an unbounded
// store is the leak the bound exists to prevent; pass math.MaxInt for a
// bound that is never reached in practice.
func WithMaxThreads(n int) MemoryStoreOption {
	return func(m *MemoryStore) {
		if n <= 0 {
			n = DefaultMaxThreads
		}
		m.max = n
	}
}

// NewMemoryStore makes an empty memory store that keeps at most
// DefaultMaxThreads threads unless an option says otherwise.
func NewMemoryStore(opts ...MemoryStoreOption) *MemoryStore {
	m := &MemoryStore{max: DefaultMaxThreads, threads: map[string]*memThread{}, lru: list.New(),
		runs: map[string]Checkpoint{}, saved: map[string]int{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Kind implements Kinded.
func (m *MemoryStore) Kind() string { return "memory" }

// Volatile implements Volatile: the memory store dies with the process.
func (m *MemoryStore) Volatile() bool { return true }

// MaxThreads returns the bound on threads.
func (m *MemoryStore) MaxThreads() int { return m.max }

// Len returns how many threads the store keeps.
func (m *MemoryStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.threads)
}

// Thread implements Store. Reading a thread counts as a use: it becomes the
// last to be evicted.
func (m *MemoryStore) Thread(_ context.Context, id string) (Thread, bool, error) {
	m.mu.Lock()
	mt, ok := m.threads[id]
	if !ok {
		m.mu.Unlock()
		return Thread{}, false, nil
	}
	if mt.elem != nil {
		m.lru.MoveToFront(mt.elem)
	}
	kept := memThread{t: mt.t, body: mt.body} // never changed in place: PutThread replaces them
	m.mu.Unlock()
	t, err := kept.thread()
	return t, err == nil, err
}

// PutThread implements Store, then evicts the least recently used threads
// while the store holds more than its bound (never the thread just saved,
// nor a pinned one).
//
// The compare-and-swap does not change with eviction: an evicted thread is
// absent, which is revision 0, so saving one with revision 0 makes a new
// thread, and saving one with the non-zero revision it had is
// revision_conflict. That is also what a run whose thread was evicted while
// it ran gets, and on purpose: the store cannot tell an evicted thread from
// one that was never saved at that revision, and taking the write anyway
// would let a stale copy win over a thread that another run has since made
// afresh under the same id (revisions come from a store-wide clock, so the
// new thread's never equals the old one's). The run reports
// revision_conflict, and running
// again starts from a fresh thread, as after a restart. Eviction takes the
// least recently used thread, so this needs max_threads other threads to
// be used while the run is going, and a run saved in the store (PutRun)
// pins its thread for as long as it stays saved.
func (m *MemoryStore) PutThread(_ context.Context, t Thread) (uint64, error) {
	kept := keepThread(t) // outside the lock: it reads only t
	m.mu.Lock()
	defer m.mu.Unlock()
	mt, ok := m.threads[t.ID]
	var cur uint64
	if ok {
		cur = mt.t.Revision
	}
	if cur != t.Revision {
		if !ok {
			return 0, errs.New(errs.RevisionConflict, "thread %q is not in the store (revision 0, expected %d): it was evicted "+
				"(see [store] max_threads) or never saved at that revision; run again", t.ID, t.Revision)
		}
		return 0, errs.New(errs.RevisionConflict, "thread %q was saved by another run (revision %d, expected %d); run again", t.ID, cur, t.Revision)
	}
	// Revisions come from one clock for the whole store, so a thread that
	// was evicted and made again never reuses a revision: a run that loaded
	// the old thread cannot save over the new one.
	m.clock++
	kept.t.Revision = m.clock
	if !ok {
		mt = &memThread{}
		m.threads[t.ID] = mt
	}
	mt.t, mt.body = kept.t, kept.body
	m.place(t.ID, mt)
	m.evict(mt)
	return kept.t.Revision, nil
}

// place puts a thread in the LRU list, in front, or takes it out while it
// is pinned.
func (m *MemoryStore) place(id string, mt *memThread) {
	pinned := mt.t.Waiting != "" || m.saved[id] > 0
	switch {
	case pinned && mt.elem != nil:
		m.lru.Remove(mt.elem)
		mt.elem = nil
	case !pinned && mt.elem == nil:
		mt.elem = m.lru.PushFront(mt)
	case !pinned:
		m.lru.MoveToFront(mt.elem)
	}
}

// evict drops least recently used threads while there are more than the
// bound, keeping keep. Each thread is evicted at most once per save that
// added it, so saves cost O(1) amortized.
func (m *MemoryStore) evict(keep *memThread) {
	for len(m.threads) > m.max {
		e := m.lru.Back()
		if e == nil || e == keep.elem {
			return // the rest are pinned, or the thread just saved
		}
		m.lru.Remove(e)
		delete(m.threads, e.Value.(*memThread).t.ID)
	}
}

// ref counts a saved run of a thread, pinning or unpinning the thread.
func (m *MemoryStore) ref(threadID string, d int) {
	if n := m.saved[threadID] + d; n > 0 {
		m.saved[threadID] = n
	} else {
		delete(m.saved, threadID)
	}
	if mt, ok := m.threads[threadID]; ok {
		m.place(threadID, mt)
	}
}

// Run implements Store.
func (m *MemoryStore) Run(_ context.Context, id string) (Checkpoint, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp, ok := m.runs[id]
	return cloneCheckpoint(cp), ok, nil
}

// PutRun implements Store.
func (m *MemoryStore) PutRun(ctx context.Context, cp Checkpoint) error {
	return m.putOwnedRun(ctx, cloneCheckpoint(cp))
}

// putOwnedRun keeps a checkpoint nobody else holds without copying it: a
// session's own save, whose Checkpoint is a fresh deep copy, need not be
// copied twice.
func (m *MemoryStore) putOwnedRun(_ context.Context, cp Checkpoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, had := m.runs[cp.RunID]
	m.runs[cp.RunID] = cp
	if !had || old.ThreadID != cp.ThreadID {
		if had {
			m.ref(old.ThreadID, -1)
		}
		m.ref(cp.ThreadID, +1)
	}
	return nil
}

// DeleteRun implements Store.
func (m *MemoryStore) DeleteRun(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cp, ok := m.runs[id]; ok {
		delete(m.runs, id)
		m.ref(cp.ThreadID, -1)
	}
	return nil
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return value.Clone(m).(map[string]any)
}

func cloneMessages(ms []model.Message) []model.Message {
	if ms == nil {
		return nil
	}
	out := make([]model.Message, len(ms))
	for i, m := range ms {
		out[i] = m
		if m.ToolCalls != nil {
			out[i].ToolCalls = cloneCalls(m.ToolCalls)
		}
	}
	return out
}

func cloneCalls(cs []model.ToolCall) []model.ToolCall {
	out := make([]model.ToolCall, len(cs))
	for i, c := range cs {
		out[i] = c
		out[i].Args = cloneMap(c.Args)
	}
	return out
}

func cloneTools(ts []model.ToolSpec) []model.ToolSpec {
	if ts == nil {
		return nil
	}
	out := make([]model.ToolSpec, len(ts))
	for i, t := range ts {
		out[i] = t
		out[i].Parameters = cloneMap(t.Parameters)
	}
	return out
}

func cloneThread(t Thread) Thread {
	t.Values = cloneMap(t.Values)
	t.Aside = cloneMap(t.Aside)
	t.Messages = cloneMessages(t.Messages)
	return t
}

func cloneCheckpoint(cp Checkpoint) Checkpoint {
	cp.Values = cloneMap(cp.Values)
	cp.ThreadValues = cloneMap(cp.ThreadValues)
	cp.Messages = cloneMessages(cp.Messages)
	if cp.Offered != nil { // nil: every tool; empty: none
		cp.Offered = append([]string{}, cp.Offered...)
	}
	cp.Tools = cloneTools(cp.Tools)
	cp.StepTools = cloneStepTools(cp.StepTools)
	if cp.Calls != nil {
		calls := make([]CallRecord, len(cp.Calls))
		for i, c := range cp.Calls {
			calls[i] = c
			calls[i].Call.Args = cloneMap(c.Call.Args)
			calls[i].Sent = cloneMap(c.Sent)
			if c.Result != nil {
				r := *c.Result
				r.Data = value.Clone(r.Data)
				calls[i].Result = &r
			}
			if c.Gate != nil {
				g := *c.Gate
				g.Args = cloneMap(g.Args)
				calls[i].Gate = &g
			}
			if c.Resume != nil {
				r := *c.Resume
				r.Result = value.Clone(r.Result)
				calls[i].Resume = &r
			}
			if c.Ran != nil {
				r := *c.Ran
				r.Data = value.Clone(r.Data)
				calls[i].Ran = &r
			}
		}
		cp.Calls = calls
	}
	return cp
}
