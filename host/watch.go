package host

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Debounce is how long Watch waits after the last change before it
// reloads: editors save with bursts of write, rename and chmod events, and
// one save must build one generation.
const Debounce = 100 * time.Millisecond

// Watch reloads when a file of the plugin directory (recursively, new
// subdirectories included) or the configuration file changes, and calls
// notify with each reload's status. It returns when ctx ends.
func (h *Host) Watch(ctx context.Context, notify func(Status)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	watched := map[string]bool{}
	var pluginDir, configFile string
	sync := func() {
		g := h.current.Load()
		cfg := g.Config
		dir := cfg.Path(cfg.PluginDir)
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		if h.configPath != "" {
			configFile, _ = filepath.Abs(h.configPath)
			h.add(w, watched, filepath.Dir(configFile))
		}
		if dir != pluginDir {
			for d := range watched {
				if pluginDir != "" && (d == pluginDir || strings.HasPrefix(d, pluginDir+string(filepath.Separator))) {
					_ = w.Remove(d)
					delete(watched, d)
				}
			}
			pluginDir = dir
		}
		h.addTree(w, watched, pluginDir)
	}
	sync()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			name, _ := filepath.Abs(ev.Name)
			inPlugins := name == pluginDir || strings.HasPrefix(name, pluginDir+string(filepath.Separator))
			if !(inPlugins || name == configFile) || ignored(filepath.Base(name)) || ev.Op == fsnotify.Chmod {
				continue
			}
			if inPlugins && ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(name); err == nil && fi.IsDir() {
					h.addTree(w, watched, name)
				}
			}
			timer.Reset(Debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			h.log.Warn("watching for changes failed", "error", err.Error())
		case <-timer.C:
			st := h.Reload(ctx)
			sync()
			if notify != nil {
				notify(st)
			}
		}
	}
}

func (h *Host) add(w *fsnotify.Watcher, watched map[string]bool, dir string) {
	if watched[dir] {
		return
	}
	if err := w.Add(dir); err != nil {
		h.log.Warn("cannot watch a directory", "dir", dir, "error", err.Error())
		return
	}
	watched[dir] = true
}

// addTree watches dir and every directory under it (fsnotify does not
// recurse).
func (h *Host) addTree(w *fsnotify.Watcher, watched map[string]bool, dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			h.add(w, watched, p)
		}
		return nil
	})
}

// ignored reports editor and tool temporary files.
func ignored(base string) bool {
	switch {
	case base == "4913", strings.HasPrefix(base, ".#"), strings.HasSuffix(base, "~"),
		strings.HasSuffix(base, ".swp"), strings.HasSuffix(base, ".swx"), strings.HasSuffix(base, ".tmp"),
		strings.HasPrefix(base, ".") && !strings.HasSuffix(base, ".lua"):
		return true
	}
	return false
}
