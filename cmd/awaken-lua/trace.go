package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// trace prints run events as a readable trace, one line per event, with
// colours on a terminal, and ends with a summary line. The model's final
// answer is printed whole, wrapped at width.
type trace struct {
	w     io.Writer
	color bool
	width int

	start             time.Time
	steps, calls, tok int
	step              int  // the step whose header was printed last
	header            bool // the run's header line was printed
	// waiting: the run finished suspended, and the command may still answer
	// its calls and carry on; "finish suspended" is printed by end, so it
	// only shows when the command stops there.
	waiting bool
}

// end closes the trace of a command that stops with the run waiting.
func (t *trace) end() {
	if t.waiting {
		t.waiting = false
		fmt.Fprintf(t.w, "%s %s\n", t.bold("finish"), t.paint("33", "suspended"))
	}
}

// resumed is told of a run about to be resumed, before its events: one
// restored from the store emits no run_start, and its open step no
// step_start, so the trace starts its clock, its header and that step here.
func (t *trace) resumed(res run.Result) {
	if t.start.IsZero() {
		t.start = time.Now()
	}
	if !t.header {
		t.header = true
		gen := ""
		if res.Session != nil {
			gen = res.Session.Generation()
		}
		fmt.Fprintf(t.w, "%s %s · thread %s · generation %s · resumed\n", t.bold("run"), res.RunID, res.ThreadID, gen)
	}
	if res.Steps != t.step {
		t.Emit(event.StepStart{Step: res.Steps})
	}
}

func (t *trace) bold(s string) string { return t.paint("1", s) }

// paint colours s with an SGR code on a terminal.
func (t *trace) paint(code, s string) string {
	if !t.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (t *trace) Emit(ev event.Event) {
	c := t.paint
	t.waiting = false // an event after the suspension: the run went on
	label := func(s string) string { return c("2", fmt.Sprintf("  %-9s", s)) }
	switch e := ev.(type) {
	case event.RunStart:
		if t.start.IsZero() {
			t.start = time.Now()
		}
		t.header = true
		fmt.Fprintf(t.w, "%s %s · thread %s · generation %s\n", c("1", "run"), e.RunID, e.ThreadID, e.Generation)
	case event.StepStart:
		t.steps++
		t.step = e.Step
		fmt.Fprintf(t.w, "%s\n", c("1;34", fmt.Sprintf("step %d", e.Step)))
	case event.ContextMessages:
		for _, m := range e.Messages {
			fmt.Fprintf(t.w, "%s %s %s\n", label("context"), c("35", m.Key), short(fmt.Sprintf("%q", m.Content), 100))
		}
	case event.InferenceComplete:
		text := strings.TrimSpace(e.Text)
		switch {
		case text != "" && len(e.ToolCalls) == 0:
			// The final answer: whole, wrapped.
			fmt.Fprintf(t.w, "%s %s\n", label("answer"), strings.Join(wrap(text, t.textWidth()), "\n"+strings.Repeat(" ", 12)))
		case text != "":
			fmt.Fprintf(t.w, "%s %s\n", label("model"), short(fmt.Sprintf("%q", text), 120))
		}
		if e.Usage != nil {
			t.tok += e.Usage.TotalTokens
		}
		for _, tc := range e.ToolCalls {
			fmt.Fprintf(t.w, "%s → %s %s\n", label(""), c("1", tc.Name), short(compact(tc.Args), 100))
		}
		if e.Usage != nil {
			fmt.Fprintf(t.w, "%s %d tokens\n", label(""), e.Usage.TotalTokens)
		}
	case event.GateDecision:
		mark := c("33", e.Decision)
		if e.Decision == "block" {
			mark = c("31", e.Decision)
		}
		line := fmt.Sprintf("%s %s %s by %s", label("gate"), e.CallID, mark, e.Plugin)
		if e.Reason != "" {
			line += ": " + short(e.Reason, 120)
		}
		fmt.Fprintln(t.w, line)
	case event.ToolCallStart:
		t.calls++
		fmt.Fprintf(t.w, "%s %s %s %s\n", label("tool"), e.CallID, c("1", e.Name), short(compact(e.Args), 100))
	case event.ToolCallDone:
		status := e.Status
		switch status {
		case "succeeded":
			status = c("32", "✓ "+status)
		case "suspended":
			status = c("33", "⏸ "+status)
		default:
			status = c("31", "✗ "+status)
		}
		fmt.Fprintf(t.w, "%s %s %s %s\n", label(""), e.CallID, status, short(resultText(e.Result), 110))
	case event.TicketExpired:
		fmt.Fprintf(t.w, "%s %s %s: no decision before %s (%s)\n", label("expired"), e.CallID, e.TicketID, e.ExpiredAt, e.OnTimeout)
	case event.ToolCallResumed:
		if e.Result == nil {
			// An approval carries no result: the call is gated again.
			fmt.Fprintf(t.w, "%s %s resumed\n", label("resume"), e.CallID)
		} else {
			fmt.Fprintf(t.w, "%s %s resumed %s\n", label("resume"), e.CallID, short(compact(e.Result), 100))
		}
	case event.EffectFailed:
		fmt.Fprintf(t.w, "%s %s %s: %s\n", label("effect"), e.Key, c("31", "failed in "+e.Plugin), e.Error)
	case event.RunContinued:
		fmt.Fprintf(t.w, "%s by %s: %s\n", label("continue"), e.Plugin, short(fmt.Sprintf("%q", e.Content), 100))
	case event.ContinueLimit:
		fmt.Fprintf(t.w, "%s %s asked again; the run already went on %d times (max_continues)\n", label("continue"), e.Plugin, e.Max)
	case event.StepEnd:
	case event.RunFinish:
		if terminationKind(e.Termination) == run.Suspended {
			t.waiting = true
			return
		}
		col := "32"
		switch kind := terminationKind(e.Termination); kind {
		case run.Errored, run.Blocked:
			col = "31"
		case run.Cancelled:
			col = "33"
		}
		fmt.Fprintf(t.w, "%s %s\n", c("1", "finish"), c(col, e.Termination))
		fmt.Fprintf(t.w, "%s\n", c("2", fmt.Sprintf("%s · %s · %d tokens · in %s", plural(t.steps, "step", "steps"),
			plural(t.calls, "tool call", "tool calls"), t.tok, time.Since(t.start).Round(time.Millisecond))))
	}
}

// textWidth is the width the answer wraps at, past its indent.
func (t *trace) textWidth() int {
	w := t.width
	if w <= 0 {
		w = 100
	}
	return max(w-12, 20)
}

// wrap breaks text into lines of at most n runes at spaces, keeping its
// own line breaks.
func wrap(text string, n int) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			switch {
			case line == "":
				line = word
			case len([]rune(line))+1+len([]rune(word)) > n:
				out = append(out, line)
				line = word
			default:
				line += " " + word
			}
		}
		out = append(out, line)
	}
	return out
}

func resultText(r *model.ToolResult) string {
	if r == nil {
		return ""
	}
	if r.Message != "" {
		return r.Message
	}
	if s, ok := r.Data.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return compact(r.Data)
}

func compact(v any) string {
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return "{}"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// short cuts s to n runes on one line.
func short(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "\\n")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// jsonLines prints one JSON object per event, with ts (RFC 3339, UTC)
// and durations: duration_ms on inference_complete (since its step
// started), tool_call_done (since the call started), step_end and
// run_finish.
type jsonLines struct {
	w     io.Writer
	now   func() time.Time
	run   time.Time
	step  time.Time
	calls map[string]time.Time
}

func newJSONLines(w io.Writer) *jsonLines {
	return &jsonLines{w: w, now: time.Now, calls: map[string]time.Time{}}
}

// resumed starts the run's clock for a run restored from the store, which
// emits no run_start, so its run_finish has a duration too.
func (j *jsonLines) resumed(run.Result) {
	if j.run.IsZero() {
		j.run = j.now()
	}
}

func (j *jsonLines) Emit(ev event.Event) {
	m, err := event.Map(ev)
	if err != nil {
		return
	}
	now := j.now()
	m["ts"] = now.UTC().Format(time.RFC3339Nano)
	since := func(t time.Time) {
		if !t.IsZero() {
			m["duration_ms"] = float64(now.Sub(t).Microseconds()) / 1000
		}
	}
	switch e := ev.(type) {
	case event.RunStart:
		j.run = now
	case event.StepStart:
		j.step = now
	case event.InferenceComplete, event.StepEnd:
		since(j.step)
	case event.ToolCallStart:
		j.calls[e.CallID] = now
	case event.ToolCallDone:
		since(j.calls[e.CallID])
		delete(j.calls, e.CallID)
	case event.RunFinish:
		since(j.run)
	}
	// `&`, `<` and `>` as they are (a file's text, a command's `&&`), not
	// escaped for HTML as json.Marshal does; Encode ends the line.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return
	}
	j.w.Write(b.Bytes())
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	fi, err := file.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func colorOK(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// terminationKind reads the kind of a termination's text form.
func terminationKind(s string) run.TerminationKind {
	t, _ := run.ParseTermination(s)
	return t.Kind
}
