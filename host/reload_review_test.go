package host_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/host"
)

// An awaken.toml saved while a build reads the plugins is not lost: the
// generation's hash is of the configuration it holds, so the next reload
// sees the save as a change instead of calling it unchanged.
func TestConfigSavedDuringABuildIsLoadedNext(t *testing.T) {
	hp := &hangPlugin{entered: make(chan struct{}, 1)}
	dir := project(t, agentToml, map[string]string{"stamp.lua": versioned(0)})
	h := open(t, dir, host.Options{Go: []plugin.Plugin{hp}})
	if h.Current().Config.Runtime.MaxSteps == 3 {
		t.Fatal("the defaults say 3 already; pick another value")
	}
	release := hp.arm(t)
	done := make(chan host.Status, 1)
	go func() { done <- h.Reload(context.Background()) }()
	<-hp.entered // the build has read awaken.toml and is loading the plugins
	write(t, filepath.Join(dir, "awaken.toml"), agentToml+"[runtime]\nmax_steps = 3\n")
	release()
	<-done
	st := h.Reload(context.Background())
	if got := h.Current().Config.Runtime.MaxSteps; got != 3 {
		t.Fatalf("the awaken.toml saved during a build never loads: max_steps %d, last reload %q", got, st.LastResult)
	}
}
