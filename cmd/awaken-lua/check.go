package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/host"
)

// cmdCheck loads everything a run would and reports every problem it finds,
// then what loaded and the effective configuration.
func cmdCheck(e *env) int {
	fs := e.flags("check")
	showConfig := fs.Bool("config-only", false, "print only the effective configuration")
	args, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	if !e.noArgs("check", "checks", args) {
		return exitUsage
	}
	cleanup, err := e.useDefault("check")
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua check: %v\n", err)
		return exitFailed
	}
	defer cleanup()
	path := e.config
	if path == "" {
		if config.Here(host.DefaultConfig) {
			path = host.DefaultConfig
		}
	}
	var problems errs.List
	cfg, cfgErr := config.Load(path)
	if cfgErr != nil {
		problems.Add(cfgErr)
		// Keep checking the plugins with the default plugin directory
		// next to the file, so one run reports every kind of problem.
		cfg = config.Default()
		if path != "" {
			cfg.Dir = filepath.Dir(path)
		}
	} else if path == "" {
		cfg.Dir, _ = os.Getwd()
	}
	if *showConfig {
		if cfgErr != nil {
			return e.fail(cfgErr, exitFailed)
		}
		fmt.Fprint(e.stdout, cfg.Render())
		return exitOK
	}
	// Everything a start and a run would refuse, at its awaken.toml line;
	// with a configuration that did not load, only the plugins (the
	// defaults' paths are not what the user wrote).
	g, err := host.LoadPlugins(context.Background(), cfg, host.Options{})
	var set *plugin.Set
	if err != nil {
		problems.Add(err)
	} else {
		defer g.Close()
		set = g.Set
	}
	var shadow []string // the candidate's plugins
	shadowLoaded := false
	if cfgErr == nil {
		problems.Add(host.Preflight(cfg, set))
		// serve refuses to start when its [shadow] candidate does not
		// load; opening it as serve does writes nothing.
		sh, err := host.OpenShadow(context.Background(), cfg, host.Options{})
		problems.Add(err)
		if sh != nil {
			shadow, shadowLoaded = sh.Current().Lua.PluginIDs(), true
			sh.Close()
		}
	}
	if g != nil {
		if err := cfg.CheckPlugins(g.Set); err != nil {
			problems.Add(err)
		}
		for _, d := range g.Set.Describe() {
			if d.Builtin {
				continue
			}
			fmt.Fprintf(e.stdout, "plugin %s", d.ID)
			if f := g.PluginFileOf(d.ID); f != "" {
				fmt.Fprintf(e.stdout, " (%s)", f)
			}
			fmt.Fprintln(e.stdout)
			if d.Description != "" {
				fmt.Fprintf(e.stdout, "  %s\n", d.Description)
			}
			fmt.Fprintf(e.stdout, "  %-8s %d\n", "priority:", d.Priority)
			for _, part := range []struct {
				name  string
				items []string
			}{{"keys", d.Keys}, {"hooks", d.Hooks}, {"tools", d.Tools}, {"actions", d.Actions}, {"effects", d.Effects}} {
				if len(part.items) > 0 {
					fmt.Fprintf(e.stdout, "  %-8s %s\n", part.name+":", strings.Join(part.items, ", "))
				}
			}
		}
	}
	if g != nil && cfg != nil {
		printOrder(e.stdout, cfg, g.Set)
	}
	if shadowLoaded {
		ids := strings.Join(shadow, ", ")
		if ids == "" {
			ids = "(no plugins)"
		}
		fmt.Fprintf(e.stdout, "shadow candidate %s loads: %s\n", cfg.Shadow.PluginDir, ids)
	}
	if cfgErr == nil && cfg.Model.Kind == config.ModelScripted && cfg.Model.Script == "" {
		fmt.Fprintln(e.stdout, "note: no model script: run needs one ([model] script, kind = \"openai\" or \"anthropic\", or --model); serve, hook and dev do not")
	}
	if len(problems) > 0 {
		problems.Sort()
		// The shadow reads the same file unless [shadow] config names
		// another, so it meets the same problems (a tool, the workspace).
		problems = slices.CompactFunc(problems, func(a, b *errs.Error) bool { return a.Error() == b.Error() })
		fmt.Fprintln(e.stdout)
		fmt.Fprintf(e.stdout, "%s:\n", plural(len(problems), "problem", "problems"))
		for _, p := range problems {
			fmt.Fprintf(e.stdout, "%s\n", p.Error())
		}
		return exitFailed
	}
	// The plugins' configs as the plugins see them: schema defaults filled.
	eff := *cfg
	if g != nil {
		if conf, err := g.Set.Configure(cfg.Plugins); err == nil {
			eff.Plugins = conf
		}
	}
	fmt.Fprintf(e.stdout, "\nno problems; effective configuration:\n\n%s", eff.Render())
	return exitOK
}

// printOrder prints, per agent, the order in which its plugins' hooks run
// (priority, then its plugins list, then the plugin id).
func printOrder(w io.Writer, cfg *config.Config, set *plugin.Set) {
	ids := make([]string, 0, len(cfg.Agents))
	for id := range cfg.Agents {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		v, err := set.Activate(cfg.Agents[id].Plugins)
		if err != nil {
			continue // reported with the configuration's problems
		}
		order := strings.Join(v.Order(), ", ")
		if order == "" {
			order = "(no plugins)"
		}
		fmt.Fprintf(w, "agent %s runs plugins in this order: %s\n", id, order)
	}
}
