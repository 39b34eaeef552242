package run

import (
	"context"
	"sync"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/model"
	"github.com/awaken-lua/awaken-lua/engine/value"
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
	// Revision counts saves; PutThread compares it (compare-and-swap).
	Revision uint64 `json:"revision"`
}

// CallRecord is one tool call of the current step, as a checkpoint keeps it.
type CallRecord struct {
	Call    model.ToolCall    `json:"call"`
	Status  CallStatus        `json:"status"`
	Gate    *GateRecord       `json:"gate,omitempty"`
	Result  *model.ToolResult `json:"result,omitempty"`
	Resume  *ResumeRecord     `json:"resume,omitempty"`
	Started bool              `json:"started,omitempty"`
}

// Checkpoint is a run as a store keeps it: enough to continue it in another
// process, under the same or a newer plugin generation.
type Checkpoint struct {
	RunID       string          `json:"run_id"`
	ThreadID    string          `json:"thread_id"`
	AgentID     string          `json:"agent_id"`
	Generation  string          `json:"generation"`
	Status      Status          `json:"status"`
	Stage       string          `json:"stage"`
	Step        int             `json:"step"`
	Termination string          `json:"termination,omitempty"`
	Natural     bool            `json:"natural,omitempty"`
	Values      map[string]any  `json:"values"`
	Messages    []model.Message `json:"messages"`
	Offered     []string        `json:"offered,omitempty"`
	// Tools are the host's tools (StartOptions.Tools).
	Tools    []model.ToolSpec `json:"tools,omitempty"`
	Calls    []CallRecord     `json:"calls,omitempty"`
	Revision uint64           `json:"revision"`
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

// MemoryStore is a Store in memory.
type MemoryStore struct {
	mu      sync.Mutex
	threads map[string]Thread
	runs    map[string]Checkpoint
}

// NewMemoryStore makes an empty memory store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{threads: map[string]Thread{}, runs: map[string]Checkpoint{}}
}

// Thread implements Store.
func (m *MemoryStore) Thread(_ context.Context, id string) (Thread, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[id]
	return cloneThread(t), ok, nil
}

// PutThread implements Store.
func (m *MemoryStore) PutThread(_ context.Context, t Thread) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.threads[t.ID]
	if cur.Revision != t.Revision {
		return 0, errs.New(errs.RevisionConflict, "thread %q was saved by another run (revision %d, expected %d); run again", t.ID, cur.Revision, t.Revision)
	}
	t = cloneThread(t)
	t.Revision++
	m.threads[t.ID] = t
	return t.Revision, nil
}

// Run implements Store.
func (m *MemoryStore) Run(_ context.Context, id string) (Checkpoint, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp, ok := m.runs[id]
	return cloneCheckpoint(cp), ok, nil
}

// PutRun implements Store.
func (m *MemoryStore) PutRun(_ context.Context, cp Checkpoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs[cp.RunID] = cloneCheckpoint(cp)
	return nil
}

// DeleteRun implements Store.
func (m *MemoryStore) DeleteRun(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.runs, id)
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
	cp.Messages = cloneMessages(cp.Messages)
	cp.Offered = append([]string(nil), cp.Offered...)
	cp.Tools = cloneTools(cp.Tools)
	if cp.Calls != nil {
		calls := make([]CallRecord, len(cp.Calls))
		for i, c := range cp.Calls {
			calls[i] = c
			calls[i].Call.Args = cloneMap(c.Call.Args)
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
		}
		cp.Calls = calls
	}
	return cp
}
