package main

import (
	"fmt"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/run"
)

// cmdPublish stores a plugin directory in PostgreSQL as the bundle every
// replica of the sidecar loads (they pick it up within a second).
func cmdPublish(e *env) int {
	fs := e.flags("publish")
	args, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	if len(args) > 1 {
		fmt.Fprintln(e.stderr, "usage: awaken-lua publish [DIR]")
		return exitUsage
	}
	cfg, err := projectConfig(e)
	if err != nil {
		return e.fail(err, exitUsage)
	}
	if cfg.Store.Kind != config.StorePostgres {
		fmt.Fprintf(e.stderr, "awaken-lua publish: [store] kind is %q; replicas share bundles through kind = \"postgres\"\n", cfg.Store.Kind)
		return exitUsage
	}
	dir := cfg.Path(cfg.PluginDir)
	if len(args) == 1 {
		dir = args[0]
	}
	files, err := host.ReadBundle(dir)
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua publish: %v\n", err)
		return exitUsage
	}
	// The plugins must load here before every replica takes them.
	probe, err := host.Open(e.ctx, host.Options{ConfigPath: cfg.File, PluginDir: dir, Candidate: true, Store: run.NewMemoryStore()})
	if err != nil {
		fmt.Fprintln(e.stderr, "awaken-lua publish: the bundle does not load, so nothing was published:")
		return e.fail(err, exitFailed)
	}
	probe.Close()
	s, err := host.OpenPostgres(e.ctx, cfg)
	if err != nil {
		return e.fail(err, exitUsage)
	}
	defer s.Close()
	if _, err := s.Migrate(e.ctx); err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua publish: %v\n", err)
		return exitFailed
	}
	hash, err := s.Publish(e.ctx, files)
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua publish: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "published %s (%d files from %s); the replicas load it within a second\n", hash[:12], len(files), dir)
	return exitOK
}
