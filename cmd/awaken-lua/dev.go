package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/stdlib"
)

// cmdDev watches the plugin directory and awaken.toml; on every save it
// reloads, re-runs the tests and prints one status line per generation.
func cmdDev(e *env) int {
	fs := e.flags("dev")
	logger := e.logFlags(fs, nil)
	args, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	if !e.noArgs("dev", "works on", args) {
		return exitUsage
	}
	log, err := logger()
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua dev: %v\n", err)
		return exitUsage
	}
	h, err := host.Open(e.ctx, host.Options{ConfigPath: e.config, Log: log})
	if err != nil {
		return e.fail(err, configCode(err))
	}
	defer h.Close()
	d := &devStatus{w: e.stdout, h: h, log: log}
	if e.config == "" {
		// Without an awaken.toml the host holds the defaults, with no
		// plugin directory: there is nothing to load or test until one
		// appears, and "0 plugins" with the test runner's complaint
		// about a missing scripts/ would send a newcomer looking there.
		d.noConfig = func() bool {
			return !config.Here(host.DefaultConfig)
		}
	}
	d.print(h.Status())
	err = h.Watch(e.ctx, d.print)
	if err != nil {
		return e.fail(err, exitFailed)
	}
	return exitOK
}

// devStatus prints one line per event that matters: a generation loaded
// (with its test results), a failed reload (the last good generation
// stays current), the files back to what the current generation loaded
// after a failure, or a test file saved (its tests re-run).
type devStatus struct {
	w      io.Writer
	h      *host.Host
	log    *slog.Logger
	failed bool // the last reload failed
	// noConfig reports that there is no awaken.toml to load yet; nil
	// when one was named with --config.
	noConfig func() bool
}

func (d *devStatus) print(st host.Status) {
	now := time.Now().Format("15:04:05")
	w := d.w
	if st.LastResult == "failed" {
		d.failed = true
		fmt.Fprintf(w, "%s reload failed; %s stays current:\n", now, st.Generation)
		for _, e := range st.Errors {
			fmt.Fprintf(w, "  %s\n", e)
		}
		return
	}
	if d.noConfig != nil && d.noConfig() {
		fmt.Fprintf(w, "%s no awaken.toml here: waiting for one (awaken-lua init . makes a project; --config names another)\n", now)
		return
	}
	g := d.h.Current()
	var line string
	switch {
	case st.LastResult != "unchanged":
		line = fmt.Sprintf("%s %s loaded (%s, %s)", now, st.Generation, plural(len(g.Lua.PluginIDs()), "plugin", "plugins"),
			time.Duration(st.Took).Round(100*time.Microsecond))
	case d.failed:
		line = fmt.Sprintf("%s %s is current again (the files are back to what it loaded)", now, st.Generation)
	default:
		line = fmt.Sprintf("%s %s unchanged; tests re-run", now, st.Generation) // a test file was saved
	}
	d.failed = false
	sum, err := devTests(g.Config, d.log)
	switch {
	case err != nil:
		line += " · tests: " + err.Error()
	case sum.Passed+sum.Failed > 0:
		line += fmt.Sprintf(" · %d passed, %d failed", sum.Passed, sum.Failed)
	}
	rep := devReplay(g)
	if rep != nil {
		line += " · " + rep.Summary()
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
	if rep != nil && len(rep.ByKind()) > 0 {
		var parts []string
		for _, c := range rep.ByPlugin() {
			parts = append(parts, fmt.Sprintf("%s %d (%s)", c.Kind, c.N, orNone(c.Plugin)))
		}
		fmt.Fprintf(w, "  flips: %s; awaken-lua replay shows samples\n", strings.Join(parts, " · "))
	}
}

// devReplay replays the configured journal through the generation just
// loaded, so each save shows what the change would have decided
// differently on recorded traffic; nil when there is no journal yet.
func devReplay(g *host.Generation) *replay.Report {
	jc := g.Config.Journal
	if jc.Path == "" {
		return nil
	}
	files, err := journal.Files(g.Config.Path(jc.Path))
	if err != nil || len(files) == 0 {
		return nil
	}
	rep, err := replay.Run(context.Background(), g.Runtime, files, replay.Options{})
	if err != nil || rep.Runs == 0 {
		return nil
	}
	return rep
}

func orNone(s string) string {
	if s == "" {
		return "runtime"
	}
	return s
}

func devTests(cfg *config.Config, log *slog.Logger) (luabridge.TestSummary, error) {
	files, plugins, err := testFiles(cfg, nil)
	if err != nil {
		return luabridge.TestSummary{}, err
	}
	return luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files, Plugins: plugins,
		Stdlib: luabridge.Source{FS: stdlib.FS, Name: "stdlib"}, Limits: luabridge.Limits{HookTimeout: hookTimeout(cfg)}, Log: log}), nil
}

func hookTimeout(cfg *config.Config) time.Duration { return time.Duration(cfg.Runtime.HookTimeout) }
