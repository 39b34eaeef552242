package host_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/model/scripted"
	"github.com/awaken-lua/awaken-lua/run"
)

// project writes an awaken.toml and plugin files into a temp dir.
func project(t testing.TB, toml string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "awaken.toml"), toml)
	for name, src := range files {
		write(t, filepath.Join(dir, "scripts", name), src)
	}
	return dir
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// Write then rename, as editors do, so a reader never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func open(t testing.TB, dir string, o host.Options) *host.Host {
	t.Helper()
	o.ConfigPath = filepath.Join(dir, "awaken.toml")
	h, err := host.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

const baseToml = `
[model]
kind = "scripted"
script = "script.toml"
[agents.default]
tools = []
`

// versioned stamps its version at every phase it sees; a run that mixed
// generations would record two versions.
func versioned(v int) string {
	return fmt.Sprintf(`local awaken = require("awaken")
local p = awaken.plugin { id = "stamp" }
local seen = p:key("stamp.seen", { reducer = "union", default = {} })
for _, ph in ipairs({ "run_start", "step_start", "before_inference", "after_inference", "step_end", "run_end" }) do
  p:on(ph, function(ctx) ctx:update(seen, %d) end)
end
return p
`, v)
}

func TestReloadUnderLoad(t *testing.T) {
	// The hook deadline is the wall clock: with 8 runners, reloads and the
	// race detector on 2 cores, a hook can wait past the default 100ms for
	// a core. Deadlines are tested elsewhere; here a run must not fail
	// because of a reload.
	dir := project(t, "[runtime]\nhook_timeout = \"30s\"\n"+baseToml, map[string]string{"stamp.lua": versioned(0)})
	write(t, filepath.Join(dir, "script.toml"), "[[turns]]\ntext = \"done\"\n")
	h := open(t, dir, host.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var runs, mixed atomic.Int64
	errCh := make(chan error, 16)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				g := h.Acquire()
				rec := &event.Recorder{}
				m, err := g.Model()
				if err != nil {
					errCh <- err
					g.Release()
					return
				}
				res, err := g.Runtime.Run(context.Background(), run.Request{Prompt: "hi", Model: m, Events: rec})
				g.Release()
				if err != nil || res.Err != nil || res.Termination != "natural" {
					errCh <- fmt.Errorf("run: %v %v %s", err, res.Err, res.Termination)
					return
				}
				if seen, _ := res.State["stamp.seen"].([]any); len(seen) != 1 {
					mixed.Add(1)
				}
				if rs := rec.Events()[0].(event.RunStart); rs.Generation != g.ID {
					errCh <- fmt.Errorf("run_start names generation %s, the run pinned %s", rs.Generation, g.ID)
					return
				}
				runs.Add(1)
			}
		}()
	}
	for v := 1; v <= 50; v++ {
		write(t, filepath.Join(dir, "scripts", "stamp.lua"), versioned(v))
		if st := h.Reload(context.Background()); st.LastResult != "loaded" {
			t.Fatalf("reload %d: %+v", v, st)
		}
	}
	cancel()
	wg.Wait()
	close(errCh)
	for err := range errCh {
		t.Fatal(err)
	}
	if mixed.Load() != 0 {
		t.Fatalf("%d runs saw more than one generation", mixed.Load())
	}
	if runs.Load() == 0 {
		t.Fatal("no run completed")
	}
	if st := h.Status(); st.Reloads != 51 || st.Generation != "g51" {
		t.Fatalf("status %+v", st)
	}
}

func TestBrokenSaveKeepsTheLastGoodGeneration(t *testing.T) {
	dir := project(t, baseToml, map[string]string{"stamp.lua": versioned(1)})
	write(t, filepath.Join(dir, "script.toml"), "[[turns]]\ntext = \"done\"\n")
	h := open(t, dir, host.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.Watch(ctx, nil) }()
	// until polls a condition on the host; the watcher may start after a
	// write, so the write is repeated now and then, slower than the
	// debounce.
	until := func(what string, cond func() bool, save func()) {
		t.Helper()
		deadline := time.Now().Add(waitLimit)
		last := time.Now()
		save()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s (status %+v)", what, waitLimit, h.Status())
			}
			time.Sleep(10 * time.Millisecond)
			if time.Since(last) > time.Second {
				save()
				last = time.Now()
			}
		}
	}
	stamp := filepath.Join(dir, "scripts", "stamp.lua")
	first := h.Current().ID
	broken := "local awaken = require('awaken')\nlocal p = awaken.plugin {}\np:on('step_strat', function() end)\nreturn p\n"
	until("the broken save is reported", func() bool { return h.Status().LastResult == "failed" },
		func() { write(t, stamp, broken) })
	st := h.Status()
	if !strings.Contains(strings.Join(st.Errors, "\n"), "scripts/stamp.lua:3") || h.Current().ID != first {
		t.Fatalf("failed reload: %+v, current %s", st, h.Current().ID)
	}
	stillOpen(t, h)
	// Runs still work on the last good generation. (Had the failed reload
	// retired it, the run would wait for a Lua state forever: runResult's
	// deadline makes that fail fast.)
	if res := runResult(t, h); res.Termination != "natural" {
		t.Fatalf("run on the kept generation: %v %s", res.Err, res.Termination)
	}
	until("the good save is picked up", func() bool { return h.Current().ID != first && h.Status().LastResult == "loaded" },
		func() { write(t, stamp, versioned(2)) })
	// A new plugin in a new subdirectory is picked up too.
	until("a plugin in a new directory is picked up", func() bool {
		return strings.Contains(strings.Join(h.Current().Lua.PluginIDs(), ","), "extra")
	}, func() {
		write(t, filepath.Join(dir, "scripts", "extra", "init.lua"), "local awaken = require('awaken')\nreturn awaken.plugin {}\n")
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestOpenFailsWithPositions(t *testing.T) {
	dir := project(t, "[agents.default]\nplugns = []\n", nil)
	_, err := host.Open(context.Background(), host.Options{ConfigPath: filepath.Join(dir, "awaken.toml")})
	if !errors.Is(err, errs.ConfigInvalid) || !strings.Contains(err.Error(), "awaken.toml:2") {
		t.Fatalf("err = %v", err)
	}
}

func TestUnchangedReload(t *testing.T) {
	dir := project(t, baseToml, map[string]string{"stamp.lua": versioned(1)})
	write(t, filepath.Join(dir, "script.toml"), "[[turns]]\ntext = \"done\"\n")
	h := open(t, dir, host.Options{})
	if st := h.Reload(context.Background()); st.LastResult != "unchanged" || st.Generation != "g1" {
		t.Fatalf("status %+v", st)
	}
}

// BenchmarkReload reloads a plugin directory with the shipped example
// plugins (the README's Speed table: <= 50ms).
func BenchmarkReload(b *testing.B) {
	wd, _ := os.Getwd()
	cfg := filepath.Join(wd, "..", "awaken.toml")
	if _, err := os.Stat(cfg); err != nil {
		b.Skip("no default awaken.toml yet")
	}
	h, err := host.Open(context.Background(), host.Options{ConfigPath: cfg})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// A different model override each time defeats the unchanged check,
		// so every iteration builds a whole generation.
		if err := host.ForceReload(h, i); err != nil {
			b.Fatal(err)
		}
	}
}

func TestOldGenerationClosesAfterItsLastRun(t *testing.T) {
	dir := project(t, baseToml, map[string]string{"stamp.lua": versioned(1)})
	write(t, filepath.Join(dir, "script.toml"), "[[turns]]\ntext = \"done\"\n")
	h := open(t, dir, host.Options{})
	old := h.Acquire()
	if live := old.Lua.Stats()["stamp"][0]; live == 0 {
		t.Fatal("no warm state")
	}
	write(t, filepath.Join(dir, "scripts", "stamp.lua"), versioned(2))
	if st := h.Reload(context.Background()); st.LastResult != "loaded" {
		t.Fatal(st)
	}
	// The old generation still serves its run.
	m, _ := old.Model()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if res, err := old.Runtime.Run(ctx, run.Request{Model: m}); err != nil || res.Termination != "natural" {
		t.Fatalf("%v %s", err, res.Termination)
	}
	if live := old.Lua.Stats()["stamp"][0]; live == 0 {
		t.Fatal("the old generation closed while a run held it")
	}
	old.Release()
	if live := old.Lua.Stats()["stamp"][0]; live != 0 {
		t.Fatalf("%d states still open after the last run released the old generation", live)
	}
}

// TestMemoryStoreBound: the host builds the memory store with [store]
// max_threads, and the config's default is the store's.
func TestMemoryStoreBound(t *testing.T) {
	for _, tc := range []struct {
		name, store string
		want        int
	}{
		{"default", "", run.DefaultMaxThreads},
		{"set", "[store]\nmax_threads = 3\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, baseToml+tc.store, nil)
			write(t, filepath.Join(dir, "script.toml"), "[[turns]]\ntext = \"done\"\n")
			h := open(t, dir, host.Options{})
			ms, ok := h.Store().(*run.MemoryStore)
			if !ok {
				t.Fatalf("store is %T", h.Store())
			}
			if ms.MaxThreads() != tc.want {
				t.Fatalf("MaxThreads = %d, want %d", ms.MaxThreads(), tc.want)
			}
		})
	}
}

// Without an awaken.toml (dev started in a directory that has none yet)
// the host writes nothing there: no audit file.
func TestNoConfigWritesNothingHere(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	h, err := host.Open(context.Background(), host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := h.Acquire()
	_, _ = g.Runtime.Run(context.Background(), run.Request{Prompt: "hi", Model: scripted.New([]scripted.Turn{{Text: "done"}})})
	g.Release()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the host left %d files where it ran without a configuration: %v", len(left), left[0].Name())
	}
}
