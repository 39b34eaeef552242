package host

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

// OpenPostgres connects to the database of [store] kind = "postgres",
// whose connection string is in the environment variable [store] dsn_env.
// It does not migrate.
func OpenPostgres(ctx context.Context, c *config.Config) (*pgstore.Store, error) {
	env := c.Store.DSNEnv
	dsn := strings.TrimSpace(os.Getenv(env))
	if dsn == "" {
		return nil, errs.New(errs.ConfigInvalid, "[store] kind = \"postgres\" needs the connection string in $%s, which is empty; "+
			"export %s=postgres://user@host/db (or name another variable with dsn_env)", env, env).At(c.Pos("store", "dsn_env"))
	}
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{
		MaxConns: int32(c.Store.MaxConns), StatementTimeout: time.Duration(c.Store.StatementTimeout)})
	if err != nil {
		return nil, errs.Wrap(errs.ConfigInvalid, err, "cannot use the PostgreSQL database in $%s", env).At(c.Pos("store", "dsn_env"))
	}
	return s, nil
}
