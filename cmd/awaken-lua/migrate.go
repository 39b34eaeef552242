package main

import (
	"fmt"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

// cmdMigrate brings the PostgreSQL schema of [store] kind = "postgres" to
// the version this build needs, and does nothing else (serve also
// migrates at start).
func cmdMigrate(e *env) int {
	fs := e.flags("migrate")
	args, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	if len(args) > 0 {
		fmt.Fprintf(e.stderr, "awaken-lua migrate: unexpected argument %q\n", args[0])
		return exitUsage
	}
	cfg, err := projectConfig(e)
	if err != nil {
		return e.fail(err, exitUsage)
	}
	if cfg.Store.Kind != config.StorePostgres {
		fmt.Fprintf(e.stderr, "awaken-lua migrate: [store] kind is %q; migrate is for kind = \"postgres\"\n", cfg.Store.Kind)
		return exitUsage
	}
	s, err := host.OpenPostgres(e.ctx, cfg)
	if err != nil {
		return e.fail(err, exitUsage)
	}
	defer s.Close()
	applied, err := s.Migrate(e.ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua migrate: %v\n", err)
		return exitFailed
	}
	if len(applied) == 0 {
		fmt.Fprintf(e.stdout, "the schema is at version %d already\n", pgstore.SchemaVersion())
		return exitOK
	}
	fmt.Fprintf(e.stdout, "applied migrations %v; the schema is at version %d\n", applied, pgstore.SchemaVersion())
	return exitOK
}
