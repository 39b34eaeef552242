package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/stdlib"
)

// cmdDev watches the plugin directory and awaken.toml; on every save it
// reloads, re-runs the tests and prints one status line per generation.
func cmdDev(e *env) int {
	fs := e.flags("dev")
	if _, err := parse(fs, e.args); err != nil {
		return exitUsage
	}
	h, err := host.Open(e.ctx, host.Options{ConfigPath: e.config})
	if err != nil {
		return e.fail(err, configCode(err))
	}
	defer h.Close()
	status(e.stdout, h, h.Status())
	err = h.Watch(e.ctx, func(st host.Status) { status(e.stdout, h, st) })
	if err != nil {
		return e.fail(err, exitFailed)
	}
	return exitOK
}

// status prints one line: the generation and its test results, or why the
// reload failed (the last good generation stays current).
func status(w io.Writer, h *host.Host, st host.Status) {
	now := time.Now().Format("15:04:05")
	switch st.LastResult {
	case "failed":
		fmt.Fprintf(w, "%s reload failed; %s stays current:\n", now, st.Generation)
		for _, e := range st.Errors {
			fmt.Fprintf(w, "  %s\n", e)
		}
		return
	case "unchanged":
		return
	}
	g := h.Current()
	line := fmt.Sprintf("%s %s loaded (%s, %s)", now, st.Generation, plural(len(g.Lua.PluginIDs()), "plugin", "plugins"),
		time.Duration(st.Took).Round(100*time.Microsecond))
	sum, err := devTests(g.Config)
	switch {
	case err != nil:
		line += " · tests: " + err.Error()
	case sum.Passed+sum.Failed > 0:
		line += fmt.Sprintf(" · %d passed, %d failed", sum.Passed, sum.Failed)
	}
	fmt.Fprintln(w, line)
	if len(st.Removed) > 0 && st.LastResult == "loaded" {
		fmt.Fprintf(w, "  removed: %s (their files are gone; what they enforced no longer applies)\n", strings.Join(st.Removed, ", "))
	}
	for _, r := range sum.Results {
		if !r.Passed {
			fmt.Fprintf(w, "  FAIL %s: %s\n    %s\n", r.Pos, r.Name, strings.ReplaceAll(r.Message, "\n", "\n    "))
		}
	}
}

func devTests(cfg *config.Config) (luabridge.TestSummary, error) {
	files, plugins, err := testFiles(cfg, nil)
	if err != nil {
		return luabridge.TestSummary{}, err
	}
	return luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files, Plugins: plugins,
		Stdlib: luabridge.Source{FS: stdlib.FS, Name: "stdlib"}, Limits: luabridge.Limits{HookTimeout: hookTimeout(cfg)}}), nil
}

func hookTimeout(cfg *config.Config) time.Duration { return time.Duration(cfg.Runtime.HookTimeout) }
