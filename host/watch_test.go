package host_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/host"
)

// The watcher keeps seeing edits after the plugin directory is moved away
// (a failed reload; the last good generation stays) and back.
func TestWatchSurvivesPluginDirMovedAwayAndBack(t *testing.T) {
	dir := project(t, "plugin_dir = \"scripts\"\n"+agentToml, map[string]string{"guard.lua": guardLua, "stamp.lua": versioned(0)})
	write(t, filepath.Join(dir, "script.toml"), listScript)
	h := open(t, dir, host.Options{})
	defer watching(t, h)()
	scripts := filepath.Join(dir, "scripts")
	stamp := filepath.Join(scripts, "stamp.lua")
	// The watcher starts in its own goroutine: save until it reacts.
	first := h.Current().ID
	eventually(t, "the first edit is seen", func() bool { return h.Current().ID != first },
		func() { write(t, stamp, versioned(1)) })
	kept := h.Current().ID
	mustRename(t, scripts, scripts+".away")
	eventually(t, "the move away is a failed reload", func() bool { return h.Status().LastResult == "failed" }, nil)
	stillOpen(t, h)
	if h.Current().ID != kept || runList(t, h) != blocked {
		t.Fatalf("the move away replaced generation %s with %s", kept, h.Current().ID)
	}
	mustRename(t, scripts+".away", scripts)
	eventually(t, "the move back is seen", func() bool { return h.Status().LastResult != "failed" }, nil)
	for v := 2; v <= 3; v++ {
		before := h.Current().ID
		eventually(t, "an edit after the move back is seen", func() bool { return h.Current().ID != before },
			func() { write(t, stamp, versioned(v)) })
	}
}

// hangPlugin is a Go plugin whose registration blocks while hang holds a
// channel: a build that never ends.
type hangPlugin struct {
	hang    atomic.Pointer[chan struct{}]
	entered chan struct{}
}

func (p *hangPlugin) ID() string { return "hang" }

func (p *hangPlugin) Register(*plugin.Registrar) error {
	if c := p.hang.Load(); c != nil {
		select {
		case p.entered <- struct{}{}:
		default:
		}
		<-*c
	}
	return nil
}

// arm makes the next builds block until the returned release is called.
func (p *hangPlugin) arm(t *testing.T) func() {
	c := make(chan struct{})
	p.hang.Store(&c)
	var once sync.Once
	release := func() { once.Do(func() { p.hang.Store(nil); close(c) }) }
	t.Cleanup(release)
	return release
}

// A reload that never ends blocks neither the watcher (it still sees
// edits, and reloads them once the build ends) nor its return when its
// context ends, nor another caller of Reload whose context ends.
func TestWatchDoesNotBlockOnAStuckReload(t *testing.T) {
	hp := &hangPlugin{entered: make(chan struct{}, 1)}
	dir := project(t, agentToml, map[string]string{"stamp.lua": versioned(0)})
	write(t, filepath.Join(dir, "script.toml"), "[[turns]]\ntext = \"done\"\n")
	h := open(t, dir, host.Options{Go: []plugin.Plugin{hp}})
	stamp := filepath.Join(dir, "scripts", "stamp.lua")
	watch := func() (context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- h.Watch(ctx, nil) }()
		return cancel, done
	}
	stuck := func(v int) {
		t.Helper()
		eventually(t, "a build starts and hangs", func() bool {
			select {
			case <-hp.entered:
				return true
			default:
				return false
			}
		}, func() { write(t, stamp, versioned(v)) })
	}

	cancel, done := watch()
	release := hp.arm(t)
	stuck(1)
	// Another caller gives up when its context ends.
	ctx, stop := context.WithCancel(context.Background())
	stop()
	if st := h.Reload(ctx); st.LastResult != "failed" || !strings.Contains(strings.Join(st.Errors, " "), "still running") {
		t.Fatalf("a reload beside a stuck one: %+v", st)
	}
	// An edit during the stuck build is reloaded once it ends.
	write(t, filepath.Join(dir, "scripts", "extra.lua"), "local awaken = require('awaken')\nreturn awaken.plugin { id = \"extra\" }\n")
	release()
	eventually(t, "the edit made during the stuck build is loaded", func() bool {
		return slices.Contains(h.Current().Lua.PluginIDs(), "extra")
	}, nil)
	cancel()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("Watch did not return")
	}

	// Watch returns when its context ends, even with a build stuck.
	cancel, done = watch()
	release = hp.arm(t)
	stuck(2)
	cancel()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("Watch did not return while a reload hung")
	}
	// Let the stuck build end before the project directory goes.
	release()
	ctx, stop = context.WithTimeout(context.Background(), waitLimit)
	defer stop()
	if st := h.Reload(ctx); st.LastResult == "failed" {
		t.Fatalf("after the stuck build: %+v", st)
	}
}

// An awaken.toml made while the host watches (dev started in a directory
// without one) is the configuration from the next reload on.
func TestWatchPicksUpANewConfigFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	write(t, filepath.Join(dir, "scripts", "guard.lua"), guardLua)
	h, err := host.Open(context.Background(), host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Current().Config.Runtime.MaxSteps == 3 {
		t.Fatal("the defaults say 3 already; pick another value")
	}
	defer watching(t, h)()
	config := func() {
		write(t, filepath.Join(dir, "awaken.toml"), "plugin_dir = \"scripts\"\n[runtime]\nmax_steps = 3\n")
	}
	eventually(t, "the new awaken.toml is loaded", func() bool { return h.Current().Config.Runtime.MaxSteps == 3 }, config)
}

// watching runs h.Watch until the returned func is called (deferred by the
// test), which checks that Watch returns once its context ends.
func watching(t *testing.T, h *host.Host) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Watch(ctx, nil) }()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitLimit):
			t.Error("Watch did not return after its context ended")
		}
	}
}
