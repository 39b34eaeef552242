// Package journal keeps the decision journal: NDJSON files recording every
// run a host drives, phase by phase, with what each phase received from
// outside (model responses, tool calls and results, resume decisions, the
// clock hooks read) and what the plugins decided. Records are hash-chained
// (each carries the SHA-256 of the previous line of its file), so an edit
// is found by Verify; configured fields are masked before they are written.
// No line is longer than a reader takes (64 MiB): a record that would be is
// written without its input, the fields left out listed in Record.Omitted.
//
// The journal is the input of replay (package replay), which re-drives the
// recorded runs through a candidate plugin generation and reports the
// decisions that flip. docs/design.md, "The decision journal", explains
// the format.
package journal

import (
	"fmt"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/model"
)

// Format is the version of the record format this package writes and
// reads; a run header names it, and a reader refuses another.
const Format = 1

// Record kinds.
const (
	KindRun    = "run"    // a run header
	KindPhase  = "phase"  // one phase of a run
	KindEnd    = "end"    // a run ended
	KindShadow = "shadow" // a shadow generation disagreed
	// KindLost: a writer with a Sink could not write some records (a
	// batch the store refused, or records dropped until a retry); the
	// first line of its next stream names their runs (Record.Lost), so a
	// reader leaves those runs out from the first record lost rather than
	// replay them with a phase missing.
	KindLost = "lost"
)

// Phases of phase records: one per method of a run's session that a
// host calls. They are the engine's phase names, plus the session's own
// steps (announce, resume, cancel, end_uninferred, unbound). Approvals
// the runtime settles because they expired are resume records, their
// calls listed in Expired.
const (
	RunStart          = "run_start"
	StepStart         = "step_start"
	BeforeInference   = "before_inference"
	AfterInference    = "after_inference"
	Announce          = "announce"
	ToolGate          = "tool_gate"
	BeforeToolExecute = "before_tool_execute"
	AfterToolExecute  = "after_tool_execute"
	StepEnd           = "step_end"
	RunEnd            = "run_end"
	Resume            = "resume"
	Cancel            = "cancel"
	EndUninferred     = "end_uninferred"
	Unbound           = "unbound"
)

// Record is one line of a journal. Which fields are set depends on Rec.
type Record struct {
	// Prev is the Sum of the previous line of the file (empty on a file's
	// first line); Sum is the SHA-256 of this line without its sum field.
	// The writer sets both.
	Prev string `json:"prev,omitempty"`
	Sum  string `json:"sum,omitempty"`
	Rec  string `json:"rec"`
	// Run header.
	Format     int         `json:"format,omitempty"`
	RunID      string      `json:"run_id"`
	ThreadID   string      `json:"thread_id,omitempty"`
	Agent      string      `json:"agent,omitempty"`
	Generation *Generation `json:"generation,omitempty"`
	ConfigHash string      `json:"config_hash,omitempty"`
	// Plugins are the agent's active plugins, in the order they run.
	Plugins []string  `json:"plugins,omitempty"`
	TS      time.Time `json:"ts,omitzero"`

	// Save is the run's save count when the phase ran: replicas that
	// journal one run into one store write its phases in this order.
	Save uint64 `json:"save,omitempty"`

	// Phase record.
	Phase     string     `json:"phase,omitempty"`
	Step      int        `json:"step,omitempty"`
	Input     *Input     `json:"input,omitempty"`
	Decisions []Decision `json:"decisions,omitempty"`
	Context   []Context  `json:"context,omitempty"`
	Request   *Request   `json:"request,omitempty"`
	// Continued counts the messages runtime.continue added at step_end.
	Continued int `json:"continued,omitempty"`
	// Termination is the run's termination after the phase (or at its end).
	Termination string `json:"termination,omitempty"`
	// Failed: the phase returned an error (a hook failed, a store failed).
	Failed string `json:"failed,omitempty"`
	// Expired lists the calls a resume settled because their approval
	// expired (the runtime decided for them, ticket.on_timeout, not a human).
	Expired []string `json:"expired,omitempty"`
	// Masked lists the fields the writer masked, as paths from the input.
	Masked []string `json:"masked,omitempty"`
	// Omitted lists the fields the writer left out because the record's
	// line would have passed what a reader takes (64 MiB): "input", or,
	// when that was not enough, every field but the record's identity
	// (kind, run, thread, agent, generation, phase, step, save, time,
	// termination). Replay stops following a run at such a record.
	Omitted []string `json:"omitted,omitempty"`

	// End record.
	Steps int `json:"steps,omitempty"`

	// Shadow record: what the shadow generation decided differently.
	Shadow *Flip `json:"shadow,omitempty"`

	// Lost record: the runs whose records the writer could not write.
	Lost []LostRun `json:"lost,omitempty"`

	slot *Slot // the slot a Writer recycles once the record is written
}

// Generation names the plugin generation that made a recording.
type Generation struct {
	ID   string `json:"id"`
	Hash string `json:"hash,omitempty"`
}

// Input is everything a phase received from outside the plugins.
type Input struct {
	// Now is the host clock the phase's hooks read (ctx:now()).
	Now time.Time `json:"now,omitzero"`
	// Cwd is the working directory the agent reported, which the phase's
	// hooks read as ctx.run.cwd (absent: none, as in records written
	// before it was recorded).
	Cwd string `json:"cwd,omitempty"`
	// Messages: run_start's conversation; before_inference's when the host
	// replaced the conversation.
	Messages []model.Message `json:"messages,omitempty"`
	// Thread is the thread as run_start found it.
	Thread *Thread `json:"thread,omitempty"`
	// Tools: run_start's host tools; before_inference's candidates.
	Tools []model.ToolSpec `json:"tools,omitempty"`
	// HostTools: before_inference's candidates were the run's host tools
	// (run_start's), which are not written again.
	HostTools bool              `json:"host_tools,omitempty"`
	Params    *model.Params     `json:"params,omitempty"`
	Response  *model.Response   `json:"response,omitempty"`
	Call      *model.ToolCall   `json:"call,omitempty"`
	Result    *model.ToolResult `json:"result,omitempty"`
	Resume    []gate.Resume     `json:"resume,omitempty"`
	Reason    string            `json:"reason,omitempty"`
}

// Thread is a thread's state when a run started on it.
type Thread struct {
	Values   map[string]any  `json:"values,omitempty"`
	Messages []model.Message `json:"messages,omitempty"`
}

// Decision is the gate's decision for one call.
type Decision struct {
	CallID   string         `json:"call_id"`
	Tool     string         `json:"tool"`
	Decision gate.Kind      `json:"decision"`
	Plugin   string         `json:"plugin,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Args     map[string]any `json:"args,omitempty"` // set when a plugin rewrote them
}

// Context is a context message before_inference placed.
type Context struct {
	Key     string `json:"key"`
	Target  string `json:"target"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is what before_inference made of the request besides the
// conversation: the tools offered and the parameters.
type Request struct {
	Tools  []string     `json:"tools"`
	Params model.Params `json:"params"`
}

// Flip is one difference between a recorded decision and a candidate's.
type Flip struct {
	// Kind: "allow->block" and the like for gate decisions; "context
	// changed", "request changed", "termination changed", "continue
	// changed", or "masked" for a candidate that reads a masked field.
	Kind   string `json:"kind"`
	Plugin string `json:"plugin,omitempty"`
	RunID  string `json:"run_id"`
	Step   int    `json:"step"`
	Phase  string `json:"phase"`
	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Args are the call's arguments as recorded (masked fields masked).
	Args   map[string]any `json:"args,omitempty"`
	From   string         `json:"from"`
	To     string         `json:"to"`
	Detail string         `json:"detail,omitempty"`
	// FromArgs and ToArgs are the rewritten arguments a rewrite flip's
	// From and To show (ArgsText): a writer masks them and writes From
	// and To again from them, since a shadow's flip is made from the
	// enforced path's records, before they are masked.
	FromArgs map[string]any `json:"-"`
	ToArgs   map[string]any `json:"-"`
}

// ArgsText is how a flip's From and To show a call's arguments.
func ArgsText(args map[string]any) string { return fmt.Sprint(args) }

// LostRun names a run some of whose records a writer could not write, and
// the first of them in the run's order (see Lines): its kind and, for a
// phase, its save.
type LostRun struct {
	RunID string `json:"run_id"`
	Rec   string `json:"rec"`
	Save  uint64 `json:"save,omitempty"`
}

// before reports whether a record of kind rec at save comes before l in
// its run's order: a header first, then the phases by save, the end last.
func (l LostRun) before(rec string, save uint64) bool {
	a, b := rank(rec), rank(l.Rec)
	return a < b || a == b && save < l.Save
}

// rank orders a run's records by kind: its header, its phases, its end.
func rank(rec string) int {
	switch rec {
	case KindRun:
		return 0
	case KindEnd:
		return 2
	}
	return 1
}
