package host_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/run"
)

// waitLimit bounds every wait of these tests: generous for -race on two
// busy cores, and far below the 15-minute test timeout, so a regression
// fails fast instead of hanging.
const waitLimit = 20 * time.Second

// eventually polls cond until it holds or waitLimit passes; every second
// it calls again (a save the watcher may have missed), if given.
func eventually(t *testing.T, what string, cond func() bool, again func()) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	last := time.Now()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
		if again != nil && time.Since(last) > time.Second {
			again()
			last = time.Now()
		}
	}
}

// guardLua blocks the tool fs_list: the policy a lost plugin would stop
// enforcing.
const guardLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "guard" }
p:tool_gate(function(ctx, call)
  if call.name == "fs_list" then return awaken.block("listing is not allowed") end
end)
return p
`

const listScript = "[[turns]]\n[[turns.tool_calls]]\nname = \"fs_list\"\nargs = { path = \".\" }\n[[turns]]\ntext = \"done\"\n"

// runList runs the agent on a script whose model calls fs_list, on the
// current generation, and returns how the run ended.
func runList(t *testing.T, h *host.Host) string {
	t.Helper()
	return runResult(t, h).Termination
}

// stillOpen fails the test at once if the current generation's Lua states
// were closed (every plugin has a warm state from its load or its runs):
// a failed reload must not retire the generation it keeps.
func stillOpen(t *testing.T, h *host.Host) {
	t.Helper()
	g := h.Current()
	for id, st := range g.Lua.Stats() {
		if st[0] == 0 {
			t.Fatalf("plugin %s of the kept generation %s has no live Lua state: the generation was closed", id, g.ID)
		}
	}
}

// syncBuffer is a log sink the test reads while the host writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// blocked is how a run ends when guard is loaded.
const blocked = "blocked:listing is not allowed"

// agentToml is the rest of the test projects' awaken.toml: the scripted
// model, no audit file, and fs_list, the tool guard blocks.
const agentToml = "[model]\nscript = \"script.toml\"\n[audit]\npath = \"\"\n[agents.default]\ntools = [\"fs_list\"]\n"

// A plugin directory that is missing or not a directory fails the start
// at plugin_dir's line; only the default directory, not written in the
// file, may be absent (a project without plugins of its own).
func TestPluginDirMustExistAtStart(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		file       bool // plugins is a file
		want       string
	}{
		{"missing", "plugin_dir = \"plugins\"\n", false, "awaken.toml:1: config_invalid: plugin_dir: the plugin directory"},
		{"missing default written", "plugin_dir = \"scripts\"\n", false, "awaken.toml:1: config_invalid: plugin_dir: the plugin directory"},
		{"a file", "\nplugin_dir = \"plugins\"\n", true, "awaken.toml:2: config_invalid: plugin_dir:"},
		{"default absent", "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "awaken.toml"), tc.toml+"[model]\nscript = \"script.toml\"\n[agents.default]\ntools = []\n")
			if tc.file {
				write(t, filepath.Join(dir, "plugins"), "not a directory\n")
			}
			h, err := host.Open(context.Background(), host.Options{ConfigPath: filepath.Join(dir, "awaken.toml")})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				h.Close()
				return
			}
			if err == nil {
				h.Close()
				t.Fatal("started without its plugin directory")
			}
			if !errors.Is(err, errs.ConfigInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Moving the plugin directory away, or putting a file in its place, is a
// failed reload: the last good generation stays current and keeps
// enforcing its plugins, whether plugin_dir is written or the default.
func TestPluginDirGoneKeepsTheLastGoodGeneration(t *testing.T) {
	for _, tc := range []struct {
		name, toml, want string
		replace          func(t *testing.T, scripts string)
	}{
		{"moved away", "plugin_dir = \"scripts\"\n", "awaken.toml:1: config_invalid: plugin_dir: the plugin directory",
			func(t *testing.T, scripts string) { mustRename(t, scripts, scripts+".away") }},
		{"moved away, default", "", "awaken.toml: config_invalid: plugin_dir: the plugin directory",
			func(t *testing.T, scripts string) { mustRename(t, scripts, scripts+".away") }},
		{"deleted", "", "is gone",
			func(t *testing.T, scripts string) {
				if err := os.RemoveAll(scripts); err != nil {
					t.Fatal(err)
				}
			}},
		{"a file instead", "plugin_dir = \"scripts\"\n", "awaken.toml:1: config_invalid: plugin_dir:",
			func(t *testing.T, scripts string) {
				mustRename(t, scripts, scripts+".away")
				write(t, scripts, "oops\n")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, tc.toml+agentToml, map[string]string{"guard.lua": guardLua})
			write(t, filepath.Join(dir, "script.toml"), listScript)
			h := open(t, dir, host.Options{})
			if got := runList(t, h); got != blocked {
				t.Fatalf("before: %s", got)
			}
			first := h.Current().ID
			tc.replace(t, filepath.Join(dir, "scripts"))
			st := h.Reload(context.Background())
			if st.LastResult != "failed" || !strings.Contains(strings.Join(st.Errors, "\n"), tc.want) {
				t.Fatalf("reload without the plugin directory: %+v, want an error with %q", st, tc.want)
			}
			if h.Current().ID != first || st.Generation != first {
				t.Fatalf("current %s, want %s kept", h.Current().ID, first)
			}
			stillOpen(t, h)
			if got := runList(t, h); got != blocked {
				t.Fatalf("the kept generation stopped enforcing guard: %s", got)
			}
		})
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// Deleting a plugin file is a change the user may intend: the generation
// without it loads when the rest loads, and the log and the status say
// which plugin left. When the rest needs it, the reload fails instead.
func TestDeletedPluginFile(t *testing.T) {
	other := "local awaken = require('awaken')\nreturn awaken.plugin { id = \"other\" }\n"
	t.Run("the rest loads", func(t *testing.T) {
		dir := project(t, agentToml, map[string]string{"guard.lua": guardLua, "other.lua": other})
		write(t, filepath.Join(dir, "script.toml"), listScript)
		log := &syncBuffer{}
		h := open(t, dir, host.Options{Log: slog.New(slog.NewJSONHandler(log, nil))})
		if err := os.Remove(filepath.Join(dir, "scripts", "guard.lua")); err != nil {
			t.Fatal(err)
		}
		st := h.Reload(context.Background())
		if st.LastResult != "loaded" || !slices.Equal(st.Removed, []string{"guard"}) {
			t.Fatalf("status %+v, want loaded with guard removed", st)
		}
		if ids := h.Current().Lua.PluginIDs(); !slices.Equal(ids, []string{"other"}) {
			t.Fatalf("plugins %v", ids)
		}
		if l := log.String(); !strings.Contains(l, `"removed":"guard"`) || !strings.Contains(l, `"files":"scripts/guard.lua"`) {
			t.Fatalf("the log does not say guard left:\n%s", l)
		}
		// The status keeps saying so while this generation is current.
		if st := h.Reload(context.Background()); st.LastResult != "unchanged" || !slices.Equal(st.Removed, []string{"guard"}) {
			t.Fatalf("status after an unchanged reload: %+v", st)
		}
		if got := runList(t, h); got != "natural" {
			t.Fatalf("without guard: %s", got)
		}
		write(t, filepath.Join(dir, "scripts", "guard.lua"), guardLua)
		if st := h.Reload(context.Background()); st.LastResult != "loaded" || st.Removed != nil {
			t.Fatalf("guard back: %+v", st)
		}
	})
	t.Run("the rest needs it", func(t *testing.T) {
		dir := project(t, agentToml+"plugins = [\"guard\", \"other\"]\n", map[string]string{"guard.lua": guardLua, "other.lua": other})
		write(t, filepath.Join(dir, "script.toml"), listScript)
		h := open(t, dir, host.Options{})
		first := h.Current().ID
		if err := os.Remove(filepath.Join(dir, "scripts", "guard.lua")); err != nil {
			t.Fatal(err)
		}
		st := h.Reload(context.Background())
		if st.LastResult != "failed" || h.Current().ID != first || !strings.Contains(strings.Join(st.Errors, "\n"), `"guard"`) {
			t.Fatalf("status %+v, current %s", st, h.Current().ID)
		}
		stillOpen(t, h)
		if got := runList(t, h); got != blocked {
			t.Fatalf("the kept generation: %s", got)
		}
	})
}

// A broken awaken.toml on reload keeps the last good configuration, not
// the defaults.
func TestBrokenConfigKeepsTheLastGoodConfig(t *testing.T) {
	good := "[runtime]\nmax_steps = 3\n" + agentToml
	dir := project(t, good, map[string]string{"guard.lua": guardLua})
	write(t, filepath.Join(dir, "script.toml"), listScript)
	h := open(t, dir, host.Options{})
	first := h.Current()
	for _, broken := range []string{
		"[runtime]\nmax_steps = 3\nmax_stepz = 4\n" + agentToml, // an unknown key
		"[runtime\nmax_steps = 3\n",                             // a syntax error
		"[runtime]\nhook_timeout = \"2h\"\n" + agentToml,        // an absurd value
	} {
		write(t, filepath.Join(dir, "awaken.toml"), broken)
		st := h.Reload(context.Background())
		if st.LastResult != "failed" || !strings.Contains(strings.Join(st.Errors, "\n"), "awaken.toml:") {
			t.Fatalf("reload of %q: %+v", broken, st)
		}
		if g := h.Current(); g != first || g.Config.Runtime.MaxSteps != 3 {
			t.Fatalf("reload of %q replaced the configuration: %s, max_steps %d", broken, g.ID, g.Config.Runtime.MaxSteps)
		}
		stillOpen(t, h)
	}
	write(t, filepath.Join(dir, "awaken.toml"), "[runtime]\nmax_steps = 5\n"+agentToml)
	if st := h.Reload(context.Background()); st.LastResult != "loaded" || h.Current().Config.Runtime.MaxSteps != 5 {
		t.Fatalf("the fixed file: %+v", st)
	}
}

// The host gives plugins the hook budget of [runtime] hook_timeout: a
// hook that never ends is stopped with hook_timeout at that budget, which
// the error names (two budgets other than the default, so neither the
// default nor a fixed value passes).
func TestHostUsesTheConfiguredHookTimeout(t *testing.T) {
	spin := `local awaken = require("awaken")
local p = awaken.plugin { id = "spin" }
p:on("step_start", function(ctx) while true do end end)
return p
`
	for _, budget := range []string{"70ms", "130ms"} {
		t.Run(budget, func(t *testing.T) {
			dir := project(t, "[runtime]\nhook_timeout = \""+budget+"\"\n"+agentToml, map[string]string{"spin.lua": spin})
			write(t, filepath.Join(dir, "script.toml"), "[[turns]]\ntext = \"done\"\n")
			h := open(t, dir, host.Options{})
			got := runResult(t, h)
			if !errors.Is(got.Err, errs.HookTimeout) || !strings.Contains(got.Err.Error(), " "+budget+" ") {
				t.Fatalf("termination %s, err %v: want hook_timeout after the configured %s", got.Termination, got.Err, budget)
			}
		})
	}
}

// runResult runs the agent once on the current generation. It fails the
// test if the run has not ended within waitLimit: a run on a generation
// closed under it waits for a Lua state, and parts of a run's end ignore
// its context, so the run goes on in its goroutine and the test ends.
func runResult(t *testing.T, h *host.Host) run.Result {
	t.Helper()
	type outcome struct {
		res run.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		g := h.Acquire()
		defer g.Release()
		m, err := g.Model()
		if err != nil {
			done <- outcome{err: err}
			return
		}
		res, err := g.Runtime.Run(ctx, run.Request{Prompt: "go", Model: m})
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatal(o.err)
		}
		return o.res
	case <-time.After(waitLimit + 5*time.Second):
		t.Fatalf("the run on %s did not end within %s", h.Current().ID, waitLimit)
		return run.Result{}
	}
}

// A plugin the configuration names but nobody has is reported at the
// awaken.toml line that names it, in each form of naming.
func TestUnknownPluginAtItsLine(t *testing.T) {
	for _, tc := range []struct {
		toml string
		line string
	}{
		{"plugin_dir = \"scripts\"\n\n[agents.a]\nplugins = [\"nosuch\"]\n", "awaken.toml:4:"},
		{"plugin_dir = \"scripts\"\n\n[plugins.budgt]\nmax_steps = 1\n", "awaken.toml:3:"},
		{"plugin_dir = \"scripts\"\n\n[agents.a]\ntools = []\n[agents.a.plugins.nosuch]\nx = 1\n", "awaken.toml:5:"},
	} {
		dir := project(t, tc.toml, map[string]string{"guard.lua": guardLua})
		_, err := host.Open(context.Background(), host.Options{ConfigPath: filepath.Join(dir, "awaken.toml")})
		if err == nil || !strings.Contains(err.Error(), tc.line) || !strings.Contains(err.Error(), "nor in stdlib") {
			t.Errorf("%q: err = %v, want it at %s", tc.toml, err, tc.line)
		}
	}
}

// A model whose key variable is empty is reported at the [model] line
// that names it (or at [model], for anthropic's default variable).
func TestModelErrorsAtTheirLine(t *testing.T) {
	for _, tc := range []struct {
		model, want string
	}{
		{"[model]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1\"\nmodel = \"m\"\napi_key_env = \"AWAKEN_TEST_NO_SUCH_KEY\"\n", "awaken.toml:6:"},
		{"[model]\nkind = \"anthropic\"\nmodel = \"m\"\napi_key_env = \"AWAKEN_TEST_NO_SUCH_KEY\"\n", "awaken.toml:5:"},
	} {
		dir := project(t, "plugin_dir = \"scripts\"\n"+tc.model, map[string]string{"guard.lua": guardLua})
		h := open(t, dir, host.Options{})
		g := h.Acquire()
		_, err := g.Model()
		g.Release()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "AWAKEN_TEST_NO_SUCH_KEY") {
			t.Errorf("err = %v, want it at %s", err, tc.want)
		}
	}
}
