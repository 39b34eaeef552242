package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
)

// Phase runs one phase: GATHER (every active hook of p in parallel on one
// snapshot, commands merged in registration order, the exclusive-key
// fallback), then EXECUTE (the actions of p, round after round, until none
// is due). The phase runs on a fork of the store: if it fails, nothing of it
// is committed and none of its effects is dispatched. On success the fork is
// published and the effects run, in emission order, each on the state right
// after the commit that emitted it.
//
// in carries what the phase is about (Run, Messages, Tool, Response, Now);
// the engine fills Phase, Snap, Configs, Log and Audit.
func (x *Exec) Phase(ctx context.Context, p phase.Phase, in plugin.Input) error {
	if !p.Valid() || p == phase.ToolGate {
		return fmt.Errorf("engine: Phase(%s): use Gate for tool_gate", p)
	}
	t := x.begin(p, in)
	defer x.end(t)
	if err := t.gather(ctx); err != nil {
		return err
	}
	if err := t.execute(ctx); err != nil {
		return err
	}
	return t.finish(ctx)
}

// Apply commits one command on behalf of the runtime or a tool, in phase p:
// it is validated like a hook's, its actions are queued and its effects
// dispatched. It does not run hooks or due actions.
func (x *Exec) Apply(ctx context.Context, p phase.Phase, in plugin.Input, cmd *command.Command) error {
	t := x.begin(p, in)
	defer x.end(t)
	if err := t.validate(cmd); err != nil {
		return err
	}
	if err := t.commit(cmd, "", nil); err != nil {
		return err
	}
	return t.finish(ctx)
}

// DropPending removes queued actions, keeping those of the phases in keep
// (the run keeps run_end actions when it is done).
func (x *Exec) DropPending(ctx context.Context, keep ...phase.Phase) error {
	t := x.begin(phase.RunEnd, plugin.Input{})
	defer x.end(t)
	cur, _ := t.fork.Snapshot().Get(x.pending).([]any)
	next := make([]any, 0, len(cur))
	for _, v := range cur {
		a, _ := queuedAction(v)
		for _, k := range keep {
			if a.Phase == k {
				next = append(next, v)
				break
			}
		}
	}
	if len(next) == len(cur) {
		return nil
	}
	if _, err := t.fork.Commit(t.fork.Revision(), []state.Update{{Key: KeyPendingActions, Value: next, Plugin: "runtime"}}); err != nil {
		return err
	}
	return t.finish(ctx)
}

// PendingActions lists the queued actions, in queue order.
func (x *Exec) PendingActions() []QueuedAction {
	l, _ := x.store.Snapshot().Get(x.pending).([]any)
	out := make([]QueuedAction, 0, len(l))
	for _, v := range l {
		if a, ok := queuedAction(v); ok {
			out = append(out, a)
		}
	}
	return out
}

// FailedActions lists the dead letters, oldest first.
func (x *Exec) FailedActions() []DeadLetter {
	l, _ := x.store.Snapshot().Get(x.failed).([]any)
	out := make([]DeadLetter, 0, len(l))
	for _, v := range l {
		if d, ok := deadLetter(v); ok {
			out = append(out, d)
		}
	}
	return out
}

// txn is one phase's work on a fork of the run's store.
type txn struct {
	x       *Exec
	p       phase.Phase
	base    plugin.Input
	fork    *state.Store // &own while the phase runs
	own     state.Store
	effects []queuedEffect
}

type queuedEffect struct {
	eff  command.Effect
	snap *state.Snapshot
}

func (x *Exec) begin(p phase.Phase, in plugin.Input) *txn {
	in.Phase = p
	in.Configs = x.configs
	in.Log = x.log
	in.Audit = x.audit
	if in.Now.IsZero() {
		in.Now = x.e.clock()
	}
	t, _ := x.e.txns.Get().(*txn)
	if t == nil {
		t = new(txn)
	}
	t.x, t.p, t.base = x, p, in
	x.store.ForkInto(&t.own)
	t.fork = &t.own
	return t
}

// end returns a finished txn for a later begin, holding nothing of its
// phase.
func (x *Exec) end(t *txn) {
	clear(t.effects)
	t.x, t.p, t.base, t.fork, t.effects = nil, 0, plugin.Input{}, nil, t.effects[:0]
	t.own.Drop()
	x.e.txns.Put(t)
}

// input returns the input for a hook or handler on the fork's current state.
func (t *txn) input(snap *state.Snapshot) *plugin.Input {
	in := t.base
	in.Snap = snap
	return &in
}

func (t *txn) finish(ctx context.Context) error {
	if err := t.x.store.Publish(t.fork); err != nil {
		return err
	}
	t.dispatchEffects(ctx)
	return nil
}

func (t *txn) gather(ctx context.Context) error {
	hooks := t.x.view.Hooks(t.p)
	if len(hooks) == 0 {
		return nil
	}
	in := t.input(t.fork.Snapshot())
	cmds := make([]command.Command, len(hooks))
	for i := range cmds {
		cmds[i].Plugin = hooks[i].Plugin
	}
	failures := runParallel(len(hooks), &t.x.e.cost[t.p], func(i int) error {
		return t.x.e.timed(hooks[i].Plugin, t.p, "hook", func() error { return callHook(ctx, hooks[i].Hook, in, &cmds[i]) })
	})
	for i, err := range failures {
		if err == nil {
			err = t.validate(&cmds[i])
		}
		if err != nil {
			return t.hookError(err, hooks[i])
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	batch, deferred := t.partition(cmds)
	if err := t.commit(batch, "", nil); err != nil {
		return t.attribute(err)
	}
	// Each deferred hook runs again alone on a fresh snapshot that holds
	// every earlier commit; its first output is discarded.
	for _, i := range deferred {
		h := hooks[i]
		cmd := command.Command{Plugin: h.Plugin}
		err := t.x.e.timed(h.Plugin, t.p, "hook", func() error { return callHook(ctx, h.Hook, t.input(t.fork.Snapshot()), &cmd) })
		if err == nil {
			err = t.validate(&cmd)
		}
		if err != nil {
			return t.hookError(err, h)
		}
		if err := t.commit(&cmd, "", nil); err != nil {
			return t.attribute(err)
		}
	}
	return nil
}

// partition merges, in registration order, every command that writes no
// exclusive key already claimed by an earlier command of the batch, and
// returns the indexes of the others.
func (t *txn) partition(cmds []command.Command) (*command.Command, []int) {
	reg := t.x.e.set.Registry()
	type claim struct {
		k     *state.Key
		owner int
	}
	var buf [16]claim
	claims := buf[:0]
	var deferred []int
	batch := &command.Command{Plugin: "runtime"}
	for i := range cmds {
		conflict := false
		for _, u := range cmds[i].Updates {
			k, _ := reg.Key(u.Key)
			if k.Merge != state.Exclusive {
				continue
			}
			for _, c := range claims {
				if c.k == k && c.owner != i {
					conflict = true
					break
				}
			}
			if conflict {
				break
			}
		}
		if conflict {
			deferred = append(deferred, i)
			continue
		}
		for _, u := range cmds[i].Updates {
			if k, _ := reg.Key(u.Key); k.Merge == state.Exclusive {
				claims = append(claims, claim{k, i})
			}
		}
		batch.Merge(&cmds[i])
	}
	return batch, deferred
}

func (t *txn) execute(ctx context.Context) error {
	max := t.x.e.maxRounds
	for round := 1; ; round++ {
		due := t.due()
		if len(due) == 0 {
			return nil
		}
		if round > max {
			keys := make([]string, 0, len(due))
			for _, a := range due {
				keys = append(keys, a.Key)
			}
			return &errs.Error{Code: errs.PhaseRunLoopExceeded, Phase: t.p.String(),
				Msg: fmt.Sprintf("phase %s did not settle after %d rounds of actions (still due: %s); an action probably schedules itself: stop the chain or raise [runtime] max_phase_rounds",
					t.p, max, strings.Join(keys, ", "))}
		}
		for _, a := range due {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := t.dispatch(ctx, a); err != nil {
				return err
			}
		}
	}
}

// due lists the queued actions of this phase, in queue order.
func (t *txn) due() []QueuedAction {
	l, _ := t.fork.Snapshot().Get(t.x.pending).([]any)
	var out []QueuedAction
	for _, v := range l {
		if a, ok := queuedAction(v); ok && a.Phase == t.p {
			out = append(out, a)
		}
	}
	return out
}

// dispatch runs one action's handler on a fresh snapshot and commits its
// command together with the action's removal from the queue. A handler that
// fails, a payload that does not fit, or a command that cannot commit sends
// the action to the dead letters instead, and the handler's writes are
// dropped.
func (t *txn) dispatch(ctx context.Context, a QueuedAction) error {
	id, key := a.ID, a.Key
	payload := a.Payload
	err := func() error {
		entry, ok := t.x.e.set.Action(key)
		if !ok {
			return errs.New(errs.UnknownActionHandler, "no handler is registered for action %q", key)
		}
		p, err := entry.Schema.Conform(payload)
		if err != nil {
			return &errs.Error{Code: errs.SchemaViolation, Plugin: entry.Plugin, Key: key,
				Msg: fmt.Sprintf("the payload of action %q does not fit its schema", key), Err: err}
		}
		cmd := command.Command{Plugin: entry.Plugin}
		if err := t.x.e.timed(entry.Plugin, t.p, "action", func() error {
			in := t.input(t.fork.Snapshot())
			in.Scheduler = a.Plugin
			return callAction(ctx, entry.Handler, in, p, &cmd)
		}); err != nil {
			var e *errs.Error
			if errors.As(err, &e) {
				return err
			}
			return &errs.Error{Code: errs.HookFailed, Plugin: entry.Plugin, Phase: t.p.String(), Key: key, Pos: entry.Pos,
				Msg: fmt.Sprintf("action %q failed", key), Err: err}
		}
		if err := t.validate(&cmd); err != nil {
			return err
		}
		return t.commit(&cmd, id, nil)
	}()
	if err == nil {
		return nil
	}
	if errs.CodeOf(err) == errs.StateTooLarge {
		// The state is full: not the handler's failure to dead-letter
		// (the dead letter would only add to it), the phase's.
		return t.attribute(err)
	}
	t.x.log.Warn("action failed", "run_id", t.base.Run.ID, "action", key, "id", id, "phase", t.p.String(), "error", err.Error())
	return t.commit(&command.Command{Plugin: "runtime"}, id, &DeadLetter{ID: id, Key: key, Payload: payload, Error: err.Error()})
}

// validate checks a command before anything of it is committed: values that
// could not be recorded, undeclared keys, runtime keys written by a plugin,
// and actions or effects without a handler.
func (t *txn) validate(cmd *command.Command) error {
	fail := func(code errs.Code, key, format string, args ...any) error {
		return &errs.Error{Code: code, Plugin: cmd.Plugin, Phase: t.p.String(), Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if err := cmd.Err(); err != nil {
		return fail(errs.SchemaViolation, "", "%v", err)
	}
	set := t.x.e.set
	reg := set.Registry()
	for _, u := range cmd.Updates {
		if _, ok := reg.Key(u.Key); !ok {
			var names []string
			for _, k := range reg.Keys() {
				names = append(names, k.Name)
			}
			return fail(errs.UnknownKey, u.Key, "%q is not declared; declare it with p:key or fix the name%s", u.Key, errs.DidYouMean(u.Key, names))
		}
		if strings.HasPrefix(u.Key, plugin.RuntimeKeyPrefix) {
			if in, ok := set.Plugin(u.Plugin); !ok || !in.Builtin {
				return fail(errs.SchemaViolation, u.Key, "%q is owned by the runtime: plugins may read it but not write it; use the runtime.* actions instead", u.Key)
			}
		}
	}
	for _, a := range cmd.Actions {
		if _, ok := set.Action(a.Key); !ok {
			return fail(errs.UnknownActionHandler, a.Key, "no handler is registered for action %q; register it with p:action or fix the name%s",
				a.Key, errs.DidYouMean(a.Key, set.ActionKeys()))
		}
	}
	for _, e := range cmd.Effects {
		if _, ok := set.Effect(e.Key); !ok {
			return fail(errs.UnknownEffectHandler, e.Key, "no handler is registered for effect %q; register it with p:effect or fix the name%s",
				e.Key, errs.DidYouMean(e.Key, set.EffectKeys()))
		}
	}
	return nil
}

// commit applies cmd to the fork in one commit: its updates, its actions
// appended to the queue (minus the action being handled, remove), a dead
// letter, and a stop if none was requested before. Its effects wait for the
// phase to publish.
func (t *txn) commit(cmd *command.Command, remove string, dead *DeadLetter) error {
	snap := t.fork.Snapshot()
	ups := cmd.Updates
	extra := func(key string, v any) {
		ups = append(ups[:len(ups):len(ups)], state.Update{Key: key, Value: v, Plugin: "runtime"})
	}
	if len(cmd.Actions) > 0 || remove != "" {
		cur, _ := snap.Get(t.x.pending).([]any)
		next := make([]any, 0, len(cur)+len(cmd.Actions))
		for _, v := range cur {
			if remove != "" {
				if a, _ := queuedAction(v); a.ID == remove {
					continue
				}
			}
			next = append(next, v)
		}
		rev := strconv.FormatUint(snap.Revision()+1, 10)
		for i, a := range cmd.Actions {
			entry, _ := t.x.e.set.Action(a.Key)
			next = append(next, QueuedAction{ID: "a" + rev + "." + strconv.Itoa(i), Key: a.Key, Phase: entry.Phase,
				Payload: a.Payload, Plugin: a.Plugin}.Value())
		}
		extra(KeyPendingActions, next)
	}
	if dead != nil {
		cur, _ := snap.Get(t.x.failed).([]any)
		next := make([]any, len(cur), len(cur)+1)
		copy(next, cur)
		extra(KeyFailedActions, append(next, dead.Value()))
	}
	if cmd.Stop != nil && !snap.Has(t.x.stop) {
		extra(KeyStop, map[string]any{"code": cmd.Stop.Code, "detail": cmd.Stop.Detail, "plugin": cmd.Stop.Plugin})
	}
	next, err := t.fork.Commit(snap.Revision(), ups)
	if err != nil {
		return err
	}
	for _, e := range cmd.Effects {
		t.effects = append(t.effects, queuedEffect{eff: e, snap: next})
	}
	return nil
}

func (t *txn) dispatchEffects(ctx context.Context) {
	for _, q := range t.effects {
		entry, ok := t.x.e.set.Effect(q.eff.Key)
		if !ok {
			continue // validated at submit; unreachable
		}
		if t.x.onEff != nil {
			t.x.onEff(q.eff.Key, q.eff.Payload)
		}
		if err := t.x.e.timed(entry.Plugin, t.p, "effect", func() error { return callEffect(ctx, entry.Handler, t.input(q.snap), q.eff.Payload) }); err != nil {
			t.x.e.effectFailures.Add(1)
			t.x.log.Warn("effect failed", "run_id", t.base.Run.ID, "effect", q.eff.Key, "plugin", entry.Plugin, "error", err.Error())
			t.x.events.Emit(event.EffectFailed{Key: q.eff.Key, Plugin: entry.Plugin, Error: err.Error()})
		}
	}
	clear(t.effects)
	t.effects = t.effects[:0] // the buffer stays with the pooled transaction
}

// hookError names the plugin, phase and position of a failed hook, keeping
// a code the hook's error already has.
func (t *txn) hookError(err error, h plugin.HookEntry) error {
	return HookError(err, h.Plugin, t.p, h.Pos)
}

// HookError names the plugin, phase and position of a failed plugin call,
// keeping a code the error already has; context errors pass through.
func HookError(err error, plugin string, p phase.Phase, pos errs.Pos) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if _, ok := err.(*errs.Error); !ok {
			return err
		}
	}
	var e *errs.Error
	if errors.As(err, &e) {
		c := *e
		if c.Plugin == "" {
			c.Plugin = plugin
		}
		if c.Phase == "" {
			c.Phase = p.String()
		}
		if !c.Pos.IsValid() {
			c.Pos = pos
		}
		return &c
	}
	return &errs.Error{Code: errs.HookFailed, Plugin: plugin, Phase: p.String(), Pos: pos, Err: err}
}

// attribute adds the phase to a commit error.
func (t *txn) attribute(err error) error {
	var e *errs.Error
	if errors.As(err, &e) && e.Phase == "" {
		c := *e
		c.Phase = t.p.String()
		return &c
	}
	return err
}

// parallelMin is the expected time of a phase's hooks below which they run
// one after the other on the caller's goroutine: waking a second goroutine
// on another core costs microseconds, more than two short hooks save.
const parallelMin = 40 * time.Microsecond

// runParallel calls f(0..n-1) and returns their errors by index. When the
// calls are expected to take long enough (from the observed cost of this
// phase's hooks, cost), they run in parallel on up to GOMAXPROCS goroutines
// (the caller's included) that take the next index as they finish one;
// otherwise on the caller's goroutine. Either way they all read the same
// snapshot, so the outcome is the same.
func runParallel(n int, cost *atomic.Int64, f func(i int) error) []error {
	out := make([]error, n)
	helpers := min(n, runtime.GOMAXPROCS(0)) - 1
	start := time.Now()
	if helpers <= 0 || time.Duration(cost.Load())*time.Duration(n) < parallelMin {
		for i := range n {
			out[i] = f(i)
		}
	} else {
		var next atomic.Int32
		work := func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				out[i] = f(i)
			}
		}
		var wg sync.WaitGroup
		wg.Add(helpers)
		for range helpers {
			go func() {
				defer wg.Done()
				work()
			}()
		}
		work()
		wg.Wait()
	}
	// An exponential moving average of the time per call (wall time, so a
	// parallel round underestimates it and keeps the next one parallel
	// only while the calls stay long).
	per := int64(time.Since(start)) / int64(n)
	old := cost.Load()
	if old == 0 {
		cost.Store(per)
	} else {
		cost.Store(old + (per-old)/4)
	}
	return out
}

// panicked is a plugin call that panicked. Its message is short: it
// reaches the model and the client (a gate's block reason, a run's
// error). The stack goes to the log (timed), at debug level.
type panicked struct {
	value any
	stack []byte
}

// panicValueMax bounds the panic value a message shows.
const panicValueMax = 200

func (p *panicked) Error() string {
	v := fmt.Sprint(p.value)
	if len(v) > panicValueMax {
		n := panicValueMax
		for n > 0 && !utf8.RuneStart(v[n]) {
			n--
		}
		v = v[:n] + "..."
	}
	return "internal error (panic: " + v + "); see the log"
}

func recovered(v any) error {
	return &panicked{value: v, stack: debug.Stack()}
}

// timed runs f, reports its duration to the observer, if any, and logs the
// stack of a call that panicked.
func (e *Engine) timed(plugin string, p phase.Phase, kind string, f func() error) error {
	var err error
	if e.observe == nil {
		err = f()
	} else {
		start := time.Now()
		err = f()
		e.observe(plugin, p, kind, time.Since(start), err)
	}
	if err != nil {
		e.logPanic(err, plugin, p, kind)
	}
	return err
}

// logPanic logs the value and stack of a call that panicked.
func (e *Engine) logPanic(err error, plugin string, p phase.Phase, kind string) {
	var pe *panicked
	if errors.As(err, &pe) {
		e.log.Debug("plugin call panicked", "plugin", plugin, "phase", p.String(), "kind", kind,
			"panic", fmt.Sprint(pe.value), "stack", string(pe.stack))
	}
}

func callHook(ctx context.Context, h plugin.Hook, in *plugin.Input, out *command.Command) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = recovered(v)
		}
	}()
	return h.Run(ctx, in, out)
}

func callAction(ctx context.Context, h plugin.ActionHandler, in *plugin.Input, payload any, out *command.Command) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = recovered(v)
		}
	}()
	return h.Handle(ctx, in, payload, out)
}

func callEffect(ctx context.Context, h plugin.EffectHandler, in *plugin.Input, payload any) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = recovered(v)
		}
	}()
	return h.Handle(ctx, in, payload)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
