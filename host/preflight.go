package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model/scripted"
	"github.com/awaken-lua/awaken-lua/stdlib"
	"github.com/awaken-lua/awaken-lua/tools"
)

// What a start or a run refuses beyond what config.Parse checks: the plugin
// directory, the model script, the agents' built-in tools, and the audit,
// store and journal paths. Open and runs use the functions here, and so does
// Preflight, which `awaken-lua check` calls, so check reports exactly what
// run would refuse, each at its awaken.toml line.

// LoadPlugins loads cfg's plugins as a start would, without making a
// generation current: `awaken-lua check` uses it. Close the result.
func LoadPlugins(ctx context.Context, cfg *config.Config, o Options) (*luabridge.Generation, error) {
	src, err := pluginSource(cfg, "")
	if err != nil {
		return nil, err
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g, err := o.loader(cfg, src, log).Load(ctx)
	return g, placePlugins(cfg, err)
}

// Preflight reports what a start or a run would refuse in cfg once its
// plugins are loaded into set (nil when they did not load: plugin tools are
// unknown then, so only built-in tool names are checked): a missing or
// broken model script (none at all is run's problem only), a tool that is not built in or is off, and an audit
// file, store directory or journal directory that cannot be written. It
// writes nothing: it probes a directory by creating a temporary file and
// removing it, and makes no directory.
func Preflight(cfg *config.Config, set *plugin.Set) error {
	var list errs.List
	if cfg.Model.Kind == config.ModelScripted && cfg.Model.Script != "" {
		// No script at all is no problem but run's: serve, the hooks and
		// dev never ask the model.
		_, err := openScript(cfg)
		list.Add(err)
	}
	_, err := hostTools(cfg, set)
	list.Add(err)
	if path := cfg.Path(cfg.Audit.Path); path != "" {
		if err := probeFile(path); err != nil {
			list.Add(auditError(cfg, err))
		}
	}
	if cfg.Store.Kind == config.StoreFile {
		if err := probeDir(cfg.Path(cfg.Store.Path)); err != nil {
			list.Add(storeError(cfg, err))
		}
	}
	if cfg.Journal.Kind != config.JournalPostgres && cfg.Journal.Path != "" {
		// The writer makes the directory and its first file at start;
		// a probe says whether it could, without making either.
		if err := probeDir(cfg.Path(cfg.Journal.Path)); err != nil {
			list.Add(journalError(cfg, err))
		}
	}
	list.Sort()
	return list.Err()
}

// pluginSource opens plugin_dir. A plugin directory that is missing or not
// a directory is config_invalid at plugin_dir's line: a reload without it
// would load a generation with none of the plugins, which allows whatever
// they blocked. had is the directory the current generation loaded from
// ("" for none). The one exception is the default "scripts", not written in
// the file and not had: a project whose plugins all come from stdlib.
func pluginSource(cfg *config.Config, had string) (luabridge.Source, error) {
	dir := cfg.Path(cfg.PluginDir)
	hadDir := had != "" && had == dir
	src := luabridge.Source{Name: filepath.ToSlash(cfg.PluginDir)}
	key := []string{"plugin_dir"}
	written := cfg.Pos(key...).Line > 0
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		src.FS = os.DirFS(dir)
		return src, nil
	case err == nil:
		return src, cfg.Invalid(key, "%s is a file, not a directory; point plugin_dir at the directory that holds the plugins", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return src, cfg.Invalid(key, "cannot read the plugin directory: %v", err)
	case hadDir:
		return src, cfg.Invalid(key, "the plugin directory %s is gone (moved or deleted); the last good generation stays current until it is back", dir)
	case written:
		return src, cfg.Invalid(key, "the plugin directory %s does not exist; create it, or point plugin_dir at the directory that holds the plugins", dir)
	}
	return src, nil
}

// loader is the luabridge loader of cfg's plugins from src.
func (o Options) loader(cfg *config.Config, src luabridge.Source, log *slog.Logger) *luabridge.Loader {
	std := o.Stdlib
	if std == nil {
		std = stdlib.FS
	}
	return &luabridge.Loader{
		Plugins:  src,
		Stdlib:   luabridge.Source{FS: std, Name: "stdlib"},
		Enable:   cfg.Enabled(),
		Go:       o.Go,
		Limits:   luabridge.Limits{HookTimeout: time.Duration(cfg.Runtime.HookTimeout)},
		Log:      log,
		PoolSize: o.PoolSize,
	}
}

// hostTools makes the built-in tools the agents name, by name; names that a
// plugin of set offers are the plugin's. With set nil only names of
// built-in tools are made. Each problem is at the agent's tools line.
func hostTools(cfg *config.Config, set *plugin.Set) (map[string]plugin.Tool, error) {
	var list errs.List
	out := map[string]plugin.Tool{}
	opts := tools.Options{Root: cfg.Path(cfg.Tools.Root), ShellEnabled: cfg.Tools.Shell,
		ShellTimeout: time.Duration(cfg.Tools.ShellTimeout)}
	// The workspace is one problem of tools.root, not one per tool.
	var rootErr *errs.Error
	if fi, err := os.Stat(opts.Root); err != nil || !fi.IsDir() {
		rootErr = cfg.Invalid([]string{"tools", "root"}, "the tools' workspace %s is not a directory; create it, or point root at the directory the built-in tools may use",
			opts.Root)
	}
	for _, aid := range cfg.AgentIDs() {
		for _, name := range cfg.Agents[aid].Tools {
			if _, ok := out[name]; ok {
				continue
			}
			builtin := slices.Contains(tools.Names(), name)
			if set != nil {
				if _, isPlugin := set.All().Tool(name); isPlugin {
					continue
				}
			} else if !builtin {
				continue // perhaps a plugin's, and the plugins did not load
			}
			if rootErr != nil && builtin && (name != "shell" || cfg.Tools.Shell) {
				if !slices.Contains(list, rootErr) {
					list.Add(rootErr)
				}
				continue
			}
			t, err := tools.New(name, opts)
			if err != nil {
				msg := errText(err)
				if strings.HasPrefix(msg, "unknown built-in tool") {
					msg += ", and no plugin offers a tool of that name"
				}
				list.Add(cfg.Invalid([]string{"agents", aid, "tools"}, "tool %q: %s", name, msg))
				continue
			}
			out[name] = t
		}
	}
	list.Sort()
	return out, list.Err()
}

// openScript opens the scripted model's script. A script that cannot be
// read is a problem of awaken.toml's model.script; one that does not parse
// is reported in the script itself.
func openScript(cfg *config.Config) (*scripted.Model, error) {
	key := []string{"model", "script"}
	if cfg.Model.Script == "" {
		if cfg.Pos(key...) != cfg.Pos("model") { // written, as ""
			return nil, cfg.Invalid(key, "is empty, and run needs a model; name a script file (turns of text and tool_calls), "+
				"set kind = \"openai\" or \"anthropic\", or pass --model")
		}
		return nil, cfg.Invalid(key, "run needs a model and none is configured; add [model] script = \"scenario.toml\" "+
			"(a file of turns of text and tool_calls), or kind = \"openai\" or \"anthropic\", or pass --model")
	}
	path := cfg.Path(cfg.Model.Script)
	m, err := scripted.Open(path)
	if err == nil {
		return m, nil
	}
	if pos := errs.PosOf(err); pos.File == path && pos.Line == 0 {
		var pe *fs.PathError
		what := err.Error()
		if errors.As(err, &pe) {
			what = pe.Err.Error()
		}
		return nil, cfg.Invalid([]string{"model", "script"}, "cannot read the model script %s: %s; write one (turns of text and tool_calls), or point script at it",
			path, what)
	}
	return nil, err
}

func auditError(cfg *config.Config, err error) error {
	return cfg.Invalid([]string{"audit", "path"}, "cannot write the audit file %s: %s; fix the path or its directory's permissions, or set path = \"\" for no audit file",
		cfg.Path(cfg.Audit.Path), errText(err))
}

func journalError(cfg *config.Config, err error) error {
	return cfg.Invalid([]string{"journal", "path"}, "cannot keep the journal in %s: %s; fix the path or its permissions, or leave path out for no journal",
		cfg.Path(cfg.Journal.Path), errText(err))
}

func storeError(cfg *config.Config, err error) error {
	return cfg.Invalid([]string{"store", "path"}, "cannot keep the file store in %s: %s; fix the path or its permissions", cfg.Path(cfg.Store.Path), errText(err))
}

// errText is an error's message without the code an *errs.Error prints.
func errText(err error) string {
	var e *errs.Error
	if errors.As(err, &e) {
		if e.Err != nil && e.Msg == "" {
			return e.Err.Error()
		}
		if e.Err != nil {
			return e.Msg + ": " + e.Err.Error()
		}
		return e.Msg
	}
	return err.Error()
}

// probeFile reports why path cannot be opened for appending, creating the
// directories it lacks, as the audit sink does.
func probeFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("it is a directory; name a file, such as %s", filepath.Join(path, "audit.jsonl"))
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fmt.Errorf("it cannot be opened for writing (%s)", pathErrText(err))
		}
		return f.Close()
	}
	return probeCreate(filepath.Dir(path))
}

// probeDir reports why path cannot be a directory this process writes in,
// creating the directories it lacks, as the file store does.
func probeDir(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && !fi.IsDir():
		return errors.New("it is a file, where a directory is needed")
	case err == nil:
		return probeWritable(path)
	}
	return probeCreate(path)
}

// probeCreate reports why dir and its missing parents cannot be created:
// the nearest existing ancestor must be a directory this process writes in.
func probeCreate(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is a file, where a directory is needed", d)
			}
			return probeWritable(d)
		}
		if parent := filepath.Dir(d); parent == d {
			return fmt.Errorf("no directory on the path exists (%s)", pathErrText(err))
		}
	}
}

// probeWritable creates and removes a temporary file in dir: permission
// bits do not tell (root ignores them; a read-only mount or /proc does not).
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".awaken-probe-*")
	if err != nil {
		// Not the error itself: it names the random file, and it differs
		// between root and other users for the same directory.
		return fmt.Errorf("the directory %s is not writable", dir)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// pathErrText is an *fs.PathError's cause alone ("permission denied").
func pathErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// placePlugins gives the loader's "no such plugin" errors the line of
// awaken.toml that names the plugin.
func placePlugins(cfg *config.Config, err error) error {
	if err == nil {
		return nil
	}
	var list errs.List
	list.Add(err)
	for _, e := range list {
		if e.Code == errs.ConfigInvalid && e.Key != "" && !e.Pos.IsValid() {
			e.Pos = cfg.PluginPos(e.Key)
		}
	}
	return list.Err()
}
