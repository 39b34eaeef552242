package host_test

import (
	"path/filepath"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/host"
)

// TestStateLimitsReachTheEngine: [runtime] max_value_size and max_state_size
// bound the runs of every generation, and their defaults are the engine's.
func TestStateLimitsReachTheEngine(t *testing.T) {
	for _, tc := range []struct {
		name, runtime string
		want          state.Limits
	}{
		{"default", "", state.Limits{MaxValue: 1 << 20, MaxState: 16 << 20}},
		{"set", "[runtime]\nmax_value_size = \"64KiB\"\nmax_state_size = \"2MiB\"\n", state.Limits{MaxValue: 64 << 10, MaxState: 2 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, tc.runtime+baseToml, nil)
			write(t, filepath.Join(dir, "script.toml"), "[[turns]]\ntext = \"done\"\n")
			h := open(t, dir, host.Options{})
			if got := h.Current().Runtime.Engine().StateLimits(); got != tc.want {
				t.Fatalf("limits %+v, want %+v", got, tc.want)
			}
		})
	}
}
