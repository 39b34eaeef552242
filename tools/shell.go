package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
)

// waitDelay bounds how long a finished command may keep its output open
// through a background process before the output is closed.
const waitDelay = 500 * time.Millisecond

// shellEnvKeys are the only environment variables a command sees. The
// runtime's own environment holds secrets (the model's API key, the
// sidecar token) that the model could otherwise print with `env`.
var shellEnvKeys = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM"}

var _ plugin.Tool = (*shellTool)(nil)

// shellTool is shell.
type shellTool struct {
	w        workspace
	max      time.Duration // the longest a call may ask for
	def      time.Duration // the timeout of a call that does not ask
	outLimit int
	spec     model.ToolSpec
}

func newShell(w workspace, max time.Duration, outLimit int) *shellTool {
	def := min(DefaultShellTimeout, max)
	return &shellTool{w: w, max: max, def: def, outLimit: outLimit, spec: model.ToolSpec{
		Name: "shell",
		Description: fmt.Sprintf("Run a command with `sh -c` in the workspace root. Returns {exit_code, output, truncated, timed_out}; "+
			"output is stdout and stderr together, at most %d bytes (the start and the end are kept). "+
			"A non-zero exit_code is reported, not an error. The command is killed after timeout_ms (default %d, at most %d).",
			outLimit, def.Milliseconds(), max.Milliseconds()),
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"cmd":        map[string]any{"type": "string", "minLength": 1.0, "description": "The shell command line."},
				"timeout_ms": map[string]any{"type": "integer", "minimum": 1.0, "description": fmt.Sprintf("Timeout in milliseconds (default %d, at most %d).", def.Milliseconds(), max.Milliseconds())},
			},
			"required":             []any{"cmd"},
			"additionalProperties": false,
		},
	}}
}

func (t *shellTool) Spec() model.ToolSpec { return t.spec }

func (t *shellTool) Execute(ctx context.Context, _ *plugin.Input, args map[string]any, _ *command.Command) (model.ToolResult, error) {
	line, bad := stringArg(args, "cmd", true)
	if bad != nil {
		return *bad, nil
	}
	if line == "" {
		return model.Error(`argument "cmd" must not be empty`), nil
	}
	ms, bad := intArg(args, "timeout_ms", int(t.def.Milliseconds()), 1)
	if bad != nil {
		return *bad, nil
	}
	timeout := min(time.Duration(ms)*time.Millisecond, t.max)

	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "sh", "-c", line)
	cmd.Dir = t.w.dir
	cmd.Env = shellEnv(t.w.dir)
	out := newCapWriter(t.outLimit)
	cmd.Stdout, cmd.Stderr = out, out // one writer: exec serializes the writes
	ownGroup(cmd)                     // so a timeout kills the children too
	cmd.WaitDelay = waitDelay
	err := cmd.Run()

	output, truncated := out.result()
	data := map[string]any{"exit_code": -1.0, "output": output, "truncated": truncated, "timed_out": false}
	if cmd.ProcessState != nil {
		data["exit_code"] = float64(cmd.ProcessState.ExitCode())
	}
	switch {
	case ctx.Err() != nil:
		return model.ToolResult{}, ctx.Err() // the run was cancelled, not the command
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		data["timed_out"] = true
		data["exit_code"] = -1.0
		return model.ToolResult{
			Status: model.StatusError,
			Data:   data,
			Message: fmt.Sprintf("command timed out after %s and was killed; ask for a longer timeout_ms (at most %d) or run something quicker",
				timeout, t.max.Milliseconds()),
		}, nil
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		return model.Success(data), nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return model.Success(data), nil // the model reads exit_code
	}
	return model.ToolResult{}, fmt.Errorf("shell: run sh: %w", err)
}

func shellEnv(dir string) []string {
	env := []string{"PWD=" + dir}
	for _, k := range shellEnvKeys {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// capWriter keeps the first and last bytes of a stream up to a limit: the
// start of a command's output says what it did, the end how it failed.
type capWriter struct {
	limit int
	head  []byte // the first limit bytes
	ring  []byte // the last limit/2 bytes written after head filled
	pos   int    // next write position in ring
	full  bool   // ring has wrapped
	total int64
}

func newCapWriter(limit int) *capWriter { return &capWriter{limit: limit} }

func (w *capWriter) Write(p []byte) (int, error) {
	n := len(p)
	w.total += int64(n)
	if room := w.limit - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	tcap := w.limit / 2
	if tcap == 0 {
		return n, nil
	}
	if w.ring == nil {
		w.ring = make([]byte, tcap)
	}
	if len(p) >= tcap {
		copy(w.ring, p[len(p)-tcap:])
		w.pos, w.full = 0, true
		return n, nil
	}
	k := copy(w.ring[w.pos:], p)
	if k < len(p) {
		copy(w.ring, p[k:])
		w.full = true
	}
	w.pos = (w.pos + len(p)) % tcap
	if w.pos == 0 {
		w.full = true
	}
	return n, nil
}

// result returns the output to show and whether some was left out.
func (w *capWriter) result() (string, bool) {
	if w.total <= int64(w.limit) {
		s, _ := text(w.head, false)
		return s, false
	}
	half := w.limit / 2
	// The tail is the last half bytes of head[half:] followed by the ring.
	var after []byte
	after = append(after, w.head[half:]...)
	if w.full {
		after = append(after, w.ring[w.pos:]...)
	}
	after = append(after, w.ring[:w.pos]...)
	tail := after[max(len(after)-half, 0):]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:] // a rune cut at the start
	}
	headText, used := text(w.head[:half], true)
	omitted := w.total - int64(used) - int64(len(tail))
	tailText, _ := text(tail, false)
	return headText + "\n[... " + strconv.FormatInt(omitted, 10) + " bytes omitted ...]\n" + tailText, true
}
