package host

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/run"
)

// OpenShadow opens cfg's [shadow] candidate as serve evaluates it: a host
// of its own that reads [shadow] config (cfg's file when unset) with the
// candidate's plugin directory, writes no journal and no audit file, and
// keeps a memory store, so opening it leaves nothing behind and check can
// open it too. It returns nil without [shadow] plugin_dir. o gives the
// rest (Log, Stdlib); its ConfigPath, PluginDir, Candidate and Store are
// the shadow's.
//
// [shadow]'s own keys are checked first, at their lines in cfg's file: the
// candidate's host would place a missing directory at its configuration's
// plugin_dir, a key the candidate did not set, or load none when that key
// is left at its default.
func OpenShadow(ctx context.Context, cfg *config.Config, o Options) (*Host, error) {
	if cfg.Shadow.PluginDir == "" {
		return nil, nil
	}
	var list errs.List
	dir := cfg.Path(cfg.Shadow.PluginDir)
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		list.Add(cfg.Invalid([]string{"shadow", "plugin_dir"}, "%s is a file, not a directory; point plugin_dir at the directory that holds the candidate's plugins", dir))
	case errors.Is(err, fs.ErrNotExist):
		list.Add(cfg.Invalid([]string{"shadow", "plugin_dir"}, "the candidate's plugin directory %s does not exist; create it, or point plugin_dir at the directory that holds the candidate's plugins", dir))
	case err != nil:
		list.Add(cfg.Invalid([]string{"shadow", "plugin_dir"}, "cannot read the candidate's plugin directory: %s", pathErrText(err)))
	}
	path := cfg.File
	if cfg.Shadow.Config != "" {
		path = cfg.Path(cfg.Shadow.Config)
		if fi, err := os.Stat(path); err != nil || fi.IsDir() {
			why := "it is a directory"
			if err != nil {
				why = pathErrText(err)
			}
			list.Add(cfg.Invalid([]string{"shadow", "config"}, "cannot read the candidate's configuration %s: %s; point config at an awaken.toml, or leave it out to use this file", path, why))
		}
	}
	if err := list.Err(); err != nil {
		return nil, err
	}
	o.ConfigPath, o.PluginDir, o.Candidate, o.Store = path, dir, true, run.NewMemoryStore()
	return Open(ctx, o)
}
