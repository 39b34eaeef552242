package run_test

import (
	"errors"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/run"
)

// An embedding program that passes no engine, an engine without a set, or
// a set without the runtime's built-ins gets a config_invalid error from
// New, never a nil dereference.
func TestNewRefusesAnEngineItCannotUse(t *testing.T) {
	bare, err := plugin.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	for name, eng := range map[string]*engine.Engine{
		"nil engine":       nil,
		"nil set":          engine.New(nil),
		"set without core": engine.New(bare),
	} {
		t.Run(name, func(t *testing.T) {
			var rt *run.Runtime
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("run.New panicked: %v", p)
					}
				}()
				rt, err = run.New(eng)
			}()
			if rt != nil || !errors.Is(err, errs.ConfigInvalid) {
				t.Fatalf("run.New = %v, %v; want nil and a config_invalid error", rt, err)
			}
		})
	}
}
