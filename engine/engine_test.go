package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
)

// fixture builds an engine over Go plugins and one run's store.
type fixture struct {
	t      testing.TB
	set    *plugin.Set
	eng    *engine.Engine
	store  *state.Store
	x      *engine.Exec
	events *event.Recorder
}

func newFixture(t testing.TB, opts []engine.Option, filter []string, plugins ...plugin.Plugin) *fixture {
	t.Helper()
	set, err := engine.NewSet(plugins...)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, set: set, events: &event.Recorder{}}
	f.eng = engine.New(set, opts...)
	f.store, _, err = state.Open(set.Registry(), nil, 0, f.eng.StateLimits())
	if err != nil {
		t.Fatal(err)
	}
	view, err := set.Activate(filter)
	if err != nil {
		t.Fatal(err)
	}
	f.x, err = f.eng.Exec(engine.ExecConfig{Store: f.store, View: view, Events: f.events})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) phase(p phase.Phase) error {
	return f.x.Phase(context.Background(), p, plugin.Input{Run: plugin.RunInfo{ID: "r1", ThreadID: "t1"}})
}

func (f *fixture) get(name string) any {
	f.t.Helper()
	v, err := f.store.Snapshot().Lookup(name)
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

func key(name string, opts ...func(*state.Spec)) state.Spec {
	s := state.Spec{Name: name}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func reducer(r string) func(*state.Spec) { return func(s *state.Spec) { s.Reducer = r } }
func commutative(s *state.Spec)          { s.Merge = state.Commutative }

func keysPlugin(id string, specs ...state.Spec) plugin.Plugin {
	return plugin.New(id, func(r *plugin.Registrar) error {
		for _, s := range specs {
			if _, err := r.Key(s, errs.Pos{}); err != nil {
				return err
			}
		}
		return nil
	})
}

func hookPlugin(id string, p phase.Phase, h plugin.HookFunc) plugin.Plugin {
	return plugin.New(id, func(r *plugin.Registrar) error { return r.On(p, h, errs.Pos{}) })
}

func num(in *plugin.Input, name string) float64 {
	v, _ := in.Snap.Lookup(name)
	f, _ := v.(float64)
	return f
}

func TestSiblingHooksDoNotSeeEachOthersWrites(t *testing.T) {
	var seenByB, seenByC atomic.Value
	f := newFixture(t, nil, nil,
		keysPlugin("keys", key("a.x", commutative), key("b.x", commutative)),
		hookPlugin("a", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("a.x", 1)
			return nil
		}),
		hookPlugin("b", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			v, _ := in.Snap.Lookup("a.x")
			seenByB.Store(fmt.Sprint(v))
			out.Update("b.x", 1)
			return nil
		}),
		hookPlugin("c", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			a, _ := in.Snap.Lookup("a.x")
			b, _ := in.Snap.Lookup("b.x")
			seenByC.Store(fmt.Sprint(a, b))
			return nil
		}),
	)
	if err := f.phase(phase.StepStart); err != nil {
		t.Fatal(err)
	}
	if seenByB.Load() != "<nil>" || seenByC.Load() != "<nil> <nil>" {
		t.Fatalf("b saw %v, c saw %v", seenByB.Load(), seenByC.Load())
	}
	if f.get("a.x") != 1.0 || f.get("b.x") != 1.0 {
		t.Fatalf("a.x=%v b.x=%v", f.get("a.x"), f.get("b.x"))
	}
	if f.store.Revision() != 1 {
		t.Fatalf("fast path committed %d times, want once", f.store.Revision())
	}
}

func TestExclusiveConflictIsSerial(t *testing.T) {
	// Three read-modify-write hooks on one exclusive key: each appends its
	// name to what it reads. Run serially in registration order the result
	// is "abc"; naive merging would give "c".
	runs := map[string]*atomic.Int32{"a": {}, "b": {}, "c": {}}
	rmw := func(name string) plugin.HookFunc {
		return func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			runs[name].Add(1)
			cur, _ := in.Snap.Lookup("log")
			s, _ := cur.(string)
			out.Update("log", s+name)
			return nil
		}
	}
	f := newFixture(t, nil, nil,
		keysPlugin("keys", key("log")),
		hookPlugin("a", phase.BeforeInference, rmw("a")),
		hookPlugin("b", phase.BeforeInference, rmw("b")),
		hookPlugin("c", phase.BeforeInference, rmw("c")),
	)
	if err := f.phase(phase.BeforeInference); err != nil {
		t.Fatal(err)
	}
	if got := f.get("log"); got != "abc" {
		t.Fatalf("log = %v, want abc", got)
	}
	if runs["a"].Load() != 1 || runs["b"].Load() != 2 || runs["c"].Load() != 2 {
		t.Fatalf("runs a=%d b=%d c=%d; deferred hooks must run again exactly once",
			runs["a"].Load(), runs["b"].Load(), runs["c"].Load())
	}
	if f.store.Revision() != 3 {
		t.Fatalf("revision %d, want 3 (batch + two deferred)", f.store.Revision())
	}
}

func TestCompatibleHooksJoinTheBatch(t *testing.T) {
	// a and c conflict on x; b writes y and joins a's batch; c is deferred
	// and sees both.
	var cSaw []string
	var mu sync.Mutex
	f := newFixture(t, nil, nil,
		keysPlugin("keys", key("x"), key("y")),
		hookPlugin("a", phase.StepEnd, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("x", "a")
			return nil
		}),
		hookPlugin("b", phase.StepEnd, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("y", "b")
			return nil
		}),
		hookPlugin("c", phase.StepEnd, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			x, _ := in.Snap.Lookup("x")
			y, _ := in.Snap.Lookup("y")
			mu.Lock()
			cSaw = append(cSaw, fmt.Sprintf("%v %v", x, y))
			mu.Unlock()
			out.Update("x", "c")
			return nil
		}),
	)
	if err := f.phase(phase.StepEnd); err != nil {
		t.Fatal(err)
	}
	if strings.Join(cSaw, "|") != "<nil> <nil>|a b" || f.get("x") != "c" || f.get("y") != "b" {
		t.Fatalf("c saw %v; x=%v y=%v", cSaw, f.get("x"), f.get("y"))
	}
}

func TestCommutativeUpdatesAllApply(t *testing.T) {
	var plugins []plugin.Plugin
	plugins = append(plugins, keysPlugin("keys", key("n", commutative, reducer("add")), key("seen", commutative, reducer("append"))))
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("p%d", i)
		plugins = append(plugins, hookPlugin(name, phase.AfterToolExecute, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("n", i)
			out.Update("seen", name)
			return nil
		}))
	}
	f := newFixture(t, nil, nil, plugins...)
	if err := f.phase(phase.AfterToolExecute); err != nil {
		t.Fatal(err)
	}
	if f.get("n") != 10.0 || fmt.Sprint(f.get("seen")) != "[p1 p2 p3 p4]" || f.store.Revision() != 1 {
		t.Fatalf("n=%v seen=%v rev=%d", f.get("n"), f.get("seen"), f.store.Revision())
	}
}

func actionPlugin(id string, specs ...plugin.ActionSpec) plugin.Plugin {
	return plugin.New(id, func(r *plugin.Registrar) error {
		for _, s := range specs {
			if err := r.Action(s); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestActionChainConverges(t *testing.T) {
	step := func(name, next string) plugin.ActionSpec {
		return plugin.ActionSpec{Key: "chain." + name, Phase: phase.BeforeInference,
			Handler: plugin.ActionFunc(func(ctx context.Context, in *plugin.Input, payload any, out *command.Command) error {
				out.Update("trail", name)
				if next != "" {
					out.Schedule("chain."+next, nil)
				}
				return nil
			})}
	}
	f := newFixture(t, nil, nil,
		keysPlugin("keys", key("trail", reducer("append"))),
		actionPlugin("chain", step("a", "b"), step("b", "c"), step("c", "")),
		hookPlugin("start", phase.BeforeInference, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Schedule("chain.a", nil)
			return nil
		}),
	)
	if err := f.phase(phase.BeforeInference); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.get("trail")) != "[a b c]" {
		t.Fatalf("trail = %v", f.get("trail"))
	}
	if n := len(f.x.PendingActions()); n != 0 {
		t.Fatalf("%d actions still pending", n)
	}
	// one commit for the hook, one per handler
	if f.store.Revision() != 4 {
		t.Fatalf("revision %d, want 4", f.store.Revision())
	}
}

func TestSelfReschedulingActionHitsTheLimit(t *testing.T) {
	tests := []struct {
		name string
		opts []engine.Option
		want int // rounds
	}{
		// The default is written out: a changed default must fail here.
		{"default", nil, 16},
		{"configured", []engine.Option{engine.WithMaxRounds(3)}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Without a limit the loop never ends: the handler cancels the
			// phase long after any limit would have stopped it, and a
			// deadline backs that up, so a regression fails fast.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var calls atomic.Int32
			f := newFixture(t, tc.opts, nil,
				keysPlugin("keys", key("n", reducer("add"))),
				actionPlugin("loop", plugin.ActionSpec{Key: "loop.again", Phase: phase.StepEnd,
					Handler: plugin.ActionFunc(func(ctx context.Context, in *plugin.Input, payload any, out *command.Command) error {
						if calls.Add(1) > 1000 {
							cancel()
						}
						out.Update("n", 1)
						out.Schedule("loop.again", nil)
						return nil
					})}),
				hookPlugin("start", phase.StepEnd, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
					out.Schedule("loop.again", nil)
					return nil
				}),
			)
			err := f.x.Phase(ctx, phase.StepEnd, plugin.Input{Run: plugin.RunInfo{ID: "r1", ThreadID: "t1"}})
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.PhaseRunLoopExceeded {
				t.Fatalf("err = %v after %d handler calls, want phase_run_loop_exceeded after %d rounds", err, calls.Load(), tc.want)
			}
			if !strings.Contains(err.Error(), "step_end") || !strings.Contains(err.Error(), fmt.Sprintf("%d rounds", tc.want)) {
				t.Fatalf("error does not name the phase and count: %v", err)
			}
			if int(calls.Load()) != tc.want {
				t.Fatalf("handler ran %d times, want %d", calls.Load(), tc.want)
			}
			if f.store.Revision() != 0 || f.get("n") != nil {
				t.Fatalf("a failed phase committed: rev=%d n=%v", f.store.Revision(), f.get("n"))
			}
		})
	}
}

// TestStateTooLargeFailsThePhase feeds a key a large value in every phase,
// from a hook and from an action: once the key passes max_value_size the
// phase fails with state_too_large naming the plugin and the key, and
// nothing of it is committed (the action is not dead-lettered: the state
// is full, not the handler wrong).
func TestStateTooLargeFailsThePhase(t *testing.T) {
	item := strings.Repeat("x", 300) // 302 bytes encoded: the 4th append passes 1000
	feed := func(ctx context.Context, in *plugin.Input, out *command.Command) error {
		out.Update("log", item)
		return nil
	}
	for _, tc := range []struct {
		name   string
		plugin plugin.Plugin
	}{
		{"hook", hookPlugin("feeder", phase.StepStart, feed)},
		{"action", plugin.New("feeder", func(r *plugin.Registrar) error {
			if err := r.Action(plugin.ActionSpec{Key: "feeder.add", Phase: phase.StepStart,
				Handler: plugin.ActionFunc(func(ctx context.Context, in *plugin.Input, _ any, out *command.Command) error {
					return feed(ctx, in, out)
				})}); err != nil {
				return err
			}
			return r.On(phase.StepStart, plugin.HookFunc(func(ctx context.Context, in *plugin.Input, out *command.Command) error {
				out.Schedule("feeder.add", nil)
				return nil
			}), errs.Pos{})
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, []engine.Option{engine.WithStateLimits(state.Limits{MaxValue: 1000, MaxState: 1 << 20})}, nil,
				keysPlugin("keys", key("log", reducer("append"))), tc.plugin)
			for i := range 3 {
				if err := f.phase(phase.StepStart); err != nil {
					t.Fatalf("phase %d: %v", i+1, err)
				}
			}
			before := f.store.Snapshot()
			err := f.phase(phase.StepStart)
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.StateTooLarge || e.Plugin != "feeder" || e.Key != "log" || e.Phase != "step_start" ||
				!strings.Contains(e.Msg, "max_value_size") {
				t.Fatalf("err = %v, want state_too_large naming feeder, log and step_start", err)
			}
			if f.store.Snapshot() != before || len(f.x.FailedActions()) != 0 {
				t.Fatalf("the failed phase committed something (rev %d -> %d, dead letters %v)",
					before.Revision(), f.store.Revision(), f.x.FailedActions())
			}
		})
	}
}

func TestFailedActionsAreDeadLettered(t *testing.T) {
	handler := func(fail bool) plugin.ActionHandler {
		return plugin.ActionFunc(func(ctx context.Context, in *plugin.Input, payload any, out *command.Command) error {
			out.Update("trail", payload)
			if fail {
				return errors.New("disk on fire")
			}
			return nil
		})
	}
	f := newFixture(t, nil, nil,
		keysPlugin("keys", key("trail", reducer("append"))),
		actionPlugin("acts",
			plugin.ActionSpec{Key: "acts.ok", Phase: phase.StepStart, Handler: handler(false),
				Schema: schema.MustCompile(map[string]any{"type": "string"})},
			plugin.ActionSpec{Key: "acts.bad", Phase: phase.StepStart, Handler: handler(true)},
			plugin.ActionSpec{Key: "acts.later", Phase: phase.StepEnd, Handler: handler(false)},
		),
		hookPlugin("start", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Schedule("acts.ok", "first")
			out.Schedule("acts.bad", "boom")
			out.Schedule("acts.ok", 42) // does not fit the schema
			out.Schedule("acts.later", "later")
			out.Schedule("acts.ok", "last")
			return nil
		}),
	)
	if err := f.phase(phase.StepStart); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.get("trail")) != "[first last]" {
		t.Fatalf("trail = %v; a failing handler's writes must be dropped and later actions must run", f.get("trail"))
	}
	failed := f.x.FailedActions()
	if len(failed) != 2 {
		t.Fatalf("failed = %v", failed)
	}
	bad := failed[0]
	if bad.Key != "acts.bad" || bad.Payload != "boom" || !strings.Contains(bad.Error, "disk on fire") || bad.ID == "" {
		t.Fatalf("dead letter = %v", bad)
	}
	misfit := failed[1]
	if misfit.Key != "acts.ok" || misfit.Payload != 42.0 || !strings.Contains(misfit.Error, "schema_violation") {
		t.Fatalf("dead letter = %v", misfit)
	}
	pending := f.x.PendingActions()
	if len(pending) != 1 || pending[0].Key != "acts.later" || pending[0].Phase != phase.StepEnd {
		t.Fatalf("pending = %v; later-phase actions must stay queued", pending)
	}
	if err := f.phase(phase.StepEnd); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.get("trail")) != "[first last later]" || len(f.x.PendingActions()) != 0 {
		t.Fatalf("trail = %v pending = %v", f.get("trail"), f.x.PendingActions())
	}
}

func TestUnknownHandlersRejectTheWholeCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		emit func(out *command.Command)
		code errs.Code
	}{
		{"action", func(out *command.Command) { out.Schedule("nobody.home", 1) }, errs.UnknownActionHandler},
		{"effect", func(out *command.Command) { out.Emit("nobody.listens", 1) }, errs.UnknownEffectHandler},
		{"key", func(out *command.Command) { out.Update("nokey", 1) }, errs.UnknownKey},
		{"runtime key", func(out *command.Command) { out.Update(engine.KeyStop, 1) }, errs.SchemaViolation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil,
				keysPlugin("keys", key("n", commutative, reducer("add"))),
				hookPlugin("good", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
					out.Update("n", 1)
					return nil
				}),
				hookPlugin("bad", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
					out.Update("n", 100)
					tc.emit(out)
					return nil
				}),
			)
			err := f.phase(phase.StepStart)
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Plugin != "bad" || e.Phase != "step_start" {
				t.Fatalf("err = %#v", err)
			}
			if f.get("n") != nil || f.store.Revision() != 0 {
				t.Fatalf("state changed: n=%v", f.get("n"))
			}
		})
	}
}

func TestEffectsOrderAndPostCommitState(t *testing.T) {
	var got []string
	var mu sync.Mutex
	f := newFixture(t, nil, nil,
		keysPlugin("keys", key("n", commutative, reducer("add"))),
		plugin.New("fx", func(r *plugin.Registrar) error {
			return r.Effect(plugin.EffectSpec{Key: "fx.note", Handler: plugin.EffectFunc(func(ctx context.Context, in *plugin.Input, payload any) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf("%v@%v", payload, num(in, "n")))
				return nil
			})})
		}),
		hookPlugin("a", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("n", 1)
			out.Emit("fx.note", "a1")
			out.Emit("fx.note", "a2")
			out.Schedule("acts.bump", nil)
			return nil
		}),
		hookPlugin("b", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("n", 1)
			out.Emit("fx.note", "b1")
			return nil
		}),
		actionPlugin("acts", plugin.ActionSpec{Key: "acts.bump", Phase: phase.StepStart,
			Handler: plugin.ActionFunc(func(ctx context.Context, in *plugin.Input, payload any, out *command.Command) error {
				out.Update("n", 10)
				out.Emit("fx.note", "act")
				return nil
			})}),
	)
	if err := f.phase(phase.StepStart); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "a1@2 a2@2 b1@2 act@12" {
		t.Fatalf("effects = %v", got)
	}
}

func TestFailingEffectStopsNothing(t *testing.T) {
	var after atomic.Int32
	f := newFixture(t, nil, nil,
		keysPlugin("keys", key("n", reducer("add"))),
		plugin.New("fx", func(r *plugin.Registrar) error {
			if err := r.Effect(plugin.EffectSpec{Key: "fx.fail", Handler: plugin.EffectFunc(func(ctx context.Context, in *plugin.Input, payload any) error {
				return errors.New("smtp down")
			})}); err != nil {
				return err
			}
			if err := r.Effect(plugin.EffectSpec{Key: "fx.panic", Handler: plugin.EffectFunc(func(ctx context.Context, in *plugin.Input, payload any) error {
				panic("oops")
			})}); err != nil {
				return err
			}
			return r.Effect(plugin.EffectSpec{Key: "fx.ok", Handler: plugin.EffectFunc(func(ctx context.Context, in *plugin.Input, payload any) error {
				after.Add(1)
				return nil
			})})
		}),
		hookPlugin("a", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("n", 1)
			out.Emit("fx.fail", nil)
			out.Emit("fx.panic", nil)
			out.Emit("fx.ok", nil)
			return nil
		}),
	)
	if err := f.phase(phase.StepStart); err != nil {
		t.Fatalf("a failing effect failed the phase: %v", err)
	}
	if f.get("n") != 1.0 || after.Load() != 1 || f.eng.EffectFailures() != 2 {
		t.Fatalf("n=%v after=%d failures=%d", f.get("n"), after.Load(), f.eng.EffectFailures())
	}
	var failed []event.EffectFailed
	for _, ev := range f.events.Events() {
		if e, ok := ev.(event.EffectFailed); ok {
			failed = append(failed, e)
		}
	}
	if len(failed) != 2 || failed[0].Key != "fx.fail" || failed[0].Plugin != "fx" || !strings.Contains(failed[0].Error, "smtp down") {
		t.Fatalf("effect_failed events = %+v", failed)
	}
}

func TestActivationFilter(t *testing.T) {
	var ranInactive, handled atomic.Int32
	f := newFixture(t, nil, []string{"active"},
		keysPlugin("keys", key("n", reducer("add"))),
		plugin.New("inactive", func(r *plugin.Registrar) error {
			if err := r.On(phase.StepStart, plugin.HookFunc(func(ctx context.Context, in *plugin.Input, out *command.Command) error {
				ranInactive.Add(1)
				return nil
			}), errs.Pos{}); err != nil {
				return err
			}
			return r.Effect(plugin.EffectSpec{Key: "inactive.fx", Handler: plugin.EffectFunc(func(ctx context.Context, in *plugin.Input, payload any) error {
				handled.Add(1)
				return nil
			})})
		}),
		hookPlugin("active", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("n", 1) // keys of an inactive plugin stay writable
			out.Emit("inactive.fx", nil)
			return nil
		}),
	)
	if err := f.phase(phase.StepStart); err != nil {
		t.Fatal(err)
	}
	if ranInactive.Load() != 0 || handled.Load() != 1 || f.get("n") != 1.0 {
		t.Fatalf("inactive hook ran %d times, its effect handler %d times, n=%v", ranInactive.Load(), handled.Load(), f.get("n"))
	}
	if _, err := f.set.Activate([]string{"activ"}); !errors.Is(err, errs.ConfigInvalid) || !strings.Contains(err.Error(), `did you mean "active"`) {
		t.Fatalf("unknown plugin in filter: %v", err)
	}
}

func TestDuplicateRegistrations(t *testing.T) {
	at := func(file string, line int) errs.Pos { return errs.Pos{File: file, Line: line} }
	tests := []struct {
		name    string
		plugins []plugin.Plugin
		code    errs.Code
		places  []string
	}{
		{"key across plugins", []plugin.Plugin{
			plugin.New("a", func(r *plugin.Registrar) error { _, err := r.Key(state.Spec{Name: "x.n"}, at("a.lua", 3)); return err }),
			plugin.New("b", func(r *plugin.Registrar) error { _, err := r.Key(state.Spec{Name: "x.n"}, at("b.lua", 7)); return err }),
		}, errs.KeyAlreadyRegistered, []string{"a.lua:3", "b.lua:7"}},
		{"key within a plugin", []plugin.Plugin{
			plugin.New("a", func(r *plugin.Registrar) error {
				if _, err := r.Key(state.Spec{Name: "x.n"}, at("a.lua", 3)); err != nil {
					return err
				}
				_, err := r.Key(state.Spec{Name: "x.n"}, at("a.lua", 4))
				return err
			}),
		}, errs.KeyAlreadyRegistered, []string{"a.lua:3", "a.lua:4"}},
		{"action", []plugin.Plugin{
			actionPlugin("a", plugin.ActionSpec{Key: "x.act", Phase: phase.StepEnd, Pos: at("a.lua", 1), Handler: plugin.ActionFunc(nil)}),
			actionPlugin("b", plugin.ActionSpec{Key: "x.act", Phase: phase.StepEnd, Pos: at("b.lua", 2), Handler: plugin.ActionFunc(nil)}),
		}, errs.HandlerAlreadyRegistered, []string{"a.lua:1", "b.lua:2"}},
		{"effect", []plugin.Plugin{
			plugin.New("a", func(r *plugin.Registrar) error {
				return r.Effect(plugin.EffectSpec{Key: "x.fx", Pos: at("a.lua", 1), Handler: plugin.EffectFunc(nil)})
			}),
			plugin.New("b", func(r *plugin.Registrar) error {
				return r.Effect(plugin.EffectSpec{Key: "x.fx", Pos: at("b.lua", 5), Handler: plugin.EffectFunc(nil)})
			}),
		}, errs.HandlerAlreadyRegistered, []string{"a.lua:1", "b.lua:5"}},
		{"tool", []plugin.Plugin{
			plugin.New("a", func(r *plugin.Registrar) error { return r.Tool(namedTool("grep"), at("a.lua", 1)) }),
			plugin.New("b", func(r *plugin.Registrar) error { return r.Tool(namedTool("grep"), at("b.lua", 9)) }),
		}, errs.ToolAlreadyRegistered, []string{"a.lua:1", "b.lua:9"}},
		{"runtime prefix", []plugin.Plugin{
			plugin.New("a", func(r *plugin.Registrar) error {
				_, err := r.Key(state.Spec{Name: "__runtime.mine"}, at("a.lua", 2))
				return err
			}),
		}, errs.PluginLoadFailed, []string{"a.lua:2"}},
		{"action on tool_gate", []plugin.Plugin{
			actionPlugin("a", plugin.ActionSpec{Key: "x.act", Phase: phase.ToolGate, Pos: at("a.lua", 4), Handler: plugin.ActionFunc(nil)}),
		}, errs.PluginLoadFailed, []string{"a.lua:4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := engine.NewSet(tc.plugins...)
			if !errors.Is(err, tc.code) {
				t.Fatalf("err = %v, want %s", err, tc.code)
			}
			for _, p := range tc.places {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q does not name %s", err, p)
				}
			}
		})
	}
}

type namedTool string

func (n namedTool) Spec() model.ToolSpec { return model.ToolSpec{Name: string(n)} }
func (n namedTool) Execute(context.Context, *plugin.Input, map[string]any, *command.Command) (model.ToolResult, error) {
	return model.Success(string(n)), nil
}

func TestHookFailureCommitsNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		hook plugin.HookFunc
		want string
	}{
		{"error", func(ctx context.Context, in *plugin.Input, out *command.Command) error { return errors.New("nope") }, "nope"},
		{"panic", func(ctx context.Context, in *plugin.Input, out *command.Command) error { panic("kaboom") }, "kaboom"},
		{"bad value", func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("n", make(chan int))
			return nil
		}, "not a value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil,
				keysPlugin("keys", key("n", commutative, reducer("add"))),
				hookPlugin("good", phase.RunStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
					out.Update("n", 1)
					out.Schedule("acts.x", nil)
					return nil
				}),
				actionPlugin("acts", plugin.ActionSpec{Key: "acts.x", Phase: phase.RunStart,
					Handler: plugin.ActionFunc(func(ctx context.Context, in *plugin.Input, payload any, out *command.Command) error {
						out.Update("n", 1)
						return nil
					})}),
				hookPlugin("bad", phase.RunStart, tc.hook),
			)
			err := f.phase(phase.RunStart)
			var e *errs.Error
			if !errors.As(err, &e) || e.Plugin != "bad" || e.Phase != "run_start" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v", err)
			}
			if f.store.Revision() != 0 {
				t.Fatal("a failed phase committed")
			}
		})
	}
}

func TestStopAndDropPending(t *testing.T) {
	f := newFixture(t, nil, nil,
		actionPlugin("acts",
			plugin.ActionSpec{Key: "acts.end", Phase: phase.RunEnd, Handler: plugin.ActionFunc(func(context.Context, *plugin.Input, any, *command.Command) error { return nil })},
			plugin.ActionSpec{Key: "acts.next", Phase: phase.StepStart, Handler: plugin.ActionFunc(func(context.Context, *plugin.Input, any, *command.Command) error { return nil })},
		),
		hookPlugin("a", phase.StepEnd, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.StopRun("too_many", "enough")
			out.Schedule("acts.end", nil)
			out.Schedule("acts.next", nil)
			return nil
		}),
		hookPlugin("b", phase.StepEnd, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.StopRun("second", "")
			return nil
		}),
	)
	if err := f.phase(phase.StepEnd); err != nil {
		t.Fatal(err)
	}
	code, detail, ok := f.x.Stopped()
	if !ok || code != "too_many" || detail != "enough" {
		t.Fatalf("stop = %q %q %v", code, detail, ok)
	}
	if err := f.x.DropPending(context.Background(), phase.RunEnd); err != nil {
		t.Fatal(err)
	}
	p := f.x.PendingActions()
	if len(p) != 1 || p[0].Key != "acts.end" {
		t.Fatalf("pending = %v", p)
	}
}

func gatePlugin(id string, d gate.Decision, err error) plugin.Plugin {
	return plugin.New(id, func(r *plugin.Registrar) error {
		return r.Gate(plugin.GateFunc(func(ctx context.Context, in *plugin.Input) (gate.Decision, error) {
			return d, err
		}), errs.Pos{})
	})
}

func TestGatePriority(t *testing.T) {
	block := gate.Decision{Kind: gate.Block, Reason: "no"}
	suspend := gate.Decision{Kind: gate.Suspend, Ticket: &gate.Ticket{ID: "t"}}
	setRes := gate.Decision{Kind: gate.SetResult, Result: &model.ToolResult{Status: "success"}}
	tests := []struct {
		name     string
		plugins  []plugin.Plugin
		want     gate.Kind
		winner   string
		conflict int
	}{
		{"none", nil, gate.Allow, "", 0},
		{"block beats suspend", []plugin.Plugin{gatePlugin("s", suspend, nil), gatePlugin("b", block, nil)}, gate.Block, "b", 0},
		{"suspend beats set_result", []plugin.Plugin{gatePlugin("r", setRes, nil), gatePlugin("s", suspend, nil)}, gate.Suspend, "s", 0},
		{"first wins a tie", []plugin.Plugin{gatePlugin("b1", block, nil), gatePlugin("b2", gate.Decision{Kind: gate.Block, Reason: "two"}, nil)}, gate.Block, "b1", 1},
		{"failure blocks", []plugin.Plugin{gatePlugin("s", suspend, nil), gatePlugin("broken", gate.Decision{}, errors.New("bug"))}, gate.Block, "broken", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil, tc.plugins...)
			res, err := f.x.Gate(context.Background(), plugin.Input{Tool: &plugin.ToolInfo{Call: model.ToolCall{ID: "c1", Name: "shell", Args: map[string]any{"cmd": "ls"}}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision.Kind != tc.want || res.Decision.Plugin != tc.winner || len(res.Conflicts) != tc.conflict {
				t.Fatalf("got %v by %q with %d conflicts", res.Decision.Kind, res.Decision.Plugin, len(res.Conflicts))
			}
			if tc.name == "failure blocks" && !strings.Contains(res.Decision.Reason, "bug") {
				t.Fatalf("reason %q", res.Decision.Reason)
			}
		})
	}
}

func TestGateRewriteIsGatedAgain(t *testing.T) {
	rewriter := plugin.New("rw", func(r *plugin.Registrar) error {
		return r.Gate(plugin.GateFunc(func(ctx context.Context, in *plugin.Input) (gate.Decision, error) {
			return gate.Decision{Kind: gate.Rewrite, Args: map[string]any{"cmd": in.Tool.Call.Args["cmd"].(string) + " --safe"}}, nil
		}), errs.Pos{})
	})
	blocker := plugin.New("bl", func(r *plugin.Registrar) error {
		return r.Gate(plugin.GateFunc(func(ctx context.Context, in *plugin.Input) (gate.Decision, error) {
			if strings.HasSuffix(in.Tool.Call.Args["cmd"].(string), "--safe --safe") {
				return gate.Decision{Kind: gate.Block, Reason: "double"}, nil
			}
			return gate.Decision{}, nil
		}), errs.Pos{})
	})
	f := newFixture(t, nil, nil, rewriter, blocker)
	var buf strings.Builder
	f.x, _ = f.eng.Exec(engine.ExecConfig{Store: f.store, Log: slog.New(slog.NewTextHandler(&buf, nil))})
	res, err := f.x.Gate(context.Background(), plugin.Input{Tool: &plugin.ToolInfo{Call: model.ToolCall{ID: "c1", Name: "shell", Args: map[string]any{"cmd": "rm"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision.Kind != gate.Allow || res.Args["cmd"] != "rm --safe" || res.RewrittenBy != "rw" {
		t.Fatalf("got %+v", res)
	}
	if !strings.Contains(buf.String(), "second rewrite ignored") {
		t.Fatalf("the ignored second rewrite was not logged: %s", buf.String())
	}
}

func TestEffectFailureEventFromLogEffect(t *testing.T) {
	var buf strings.Builder
	f := newFixture(t, []engine.Option{engine.WithLogger(slog.New(slog.NewTextHandler(&buf, nil)))}, nil,
		hookPlugin("a", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Emit(engine.EffectLog, map[string]any{"level": "warn", "message": "hello", "fields": map[string]any{"x": 1}})
			return nil
		}))
	if err := f.phase(phase.StepStart); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "level=WARN msg=hello") || !strings.Contains(buf.String(), "x=1") {
		t.Fatalf("log = %q", buf.String())
	}
}

type auditRecorder struct {
	mu   sync.Mutex
	recs []map[string]any
}

func (a *auditRecorder) Append(ctx context.Context, rec map[string]any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recs = append(a.recs, rec)
	return nil
}

func TestAuditEffect(t *testing.T) {
	sink := &auditRecorder{}
	f := newFixture(t, []engine.Option{engine.WithAudit(sink)}, nil,
		hookPlugin("a", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Emit(engine.EffectAudit, map[string]any{"decision": "allow"})
			return nil
		}))
	if err := f.phase(phase.StepStart); err != nil {
		t.Fatal(err)
	}
	if len(sink.recs) != 1 || sink.recs[0]["decision"] != "allow" || sink.recs[0]["run_id"] != "r1" || sink.recs[0]["thread_id"] != "t1" {
		t.Fatalf("records = %v", sink.recs)
	}
}

func BenchmarkPhaseGo8(b *testing.B) {
	var plugins []plugin.Plugin
	var specs []state.Spec
	for i := 0; i < 8; i++ {
		specs = append(specs, key(fmt.Sprintf("k%d", i), reducer("add")))
	}
	plugins = append(plugins, keysPlugin("keys", specs...))
	for i := 0; i < 8; i++ {
		read1, read2, write := fmt.Sprintf("k%d", i), fmt.Sprintf("k%d", (i+1)%8), fmt.Sprintf("k%d", i)
		plugins = append(plugins, hookPlugin(fmt.Sprintf("p%d", i), phase.StepEnd,
			func(ctx context.Context, in *plugin.Input, out *command.Command) error {
				out.Update(write, num(in, read1)+num(in, read2)*0+1-num(in, read1))
				return nil
			}))
	}
	f := newFixture(b, nil, nil, plugins...)
	b.ReportAllocs()
	for b.Loop() {
		if err := f.phase(phase.StepEnd); err != nil {
			b.Fatal(err)
		}
	}
}

// TestExecMisuse: an embedder's Exec without a store, or with one opened
// for another plugin set, is config_invalid with what to do.
func TestExecMisuse(t *testing.T) {
	f := newFixture(t, nil, nil, keysPlugin("p", key("p.n")))
	other, err := engine.NewSet(keysPlugin("q", key("q.n")))
	if err != nil {
		t.Fatal(err)
	}
	otherStore, _, err := state.Open(other.Registry(), nil, 0, f.eng.StateLimits())
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]engine.ExecConfig{
		"no store":          {},
		"another set's one": {Store: otherStore},
	} {
		_, err := f.eng.Exec(c)
		if errs.CodeOf(err) != errs.ConfigInvalid || !strings.Contains(err.Error(), "state.Open") {
			t.Errorf("%s: %v (code %q), want config_invalid saying how to open one", name, err, errs.CodeOf(err))
		}
	}
}
