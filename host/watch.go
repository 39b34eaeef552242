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
//
// A reload runs beside the loop, so a slow or stuck build neither stops the
// loop from seeing changes (a change during a build reloads again once it
// ends) nor keeps Watch from returning when ctx ends. A watched directory
// that is moved away or deleted is forgotten, so it is watched again when
// it comes back.
func (h *Host) Watch(ctx context.Context, notify func(Status)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	watched := map[string]bool{}
	var pluginDir, configFile string
	// linked are the files and directories that links in the plugin
	// directory and the configuration file point at outside it (a shared
	// policy, a dotfiles manager's configuration): an edit there changes
	// what loads, but shows in the target's directory only. linkDirs are
	// the directories watched for them alone.
	linked, linkDirs := map[string]bool{}, map[string]bool{}
	sync := func() {
		// fsnotify drops the watch of a directory moved away; forget it too,
		// or it would never be watched again.
		live := map[string]bool{}
		for _, d := range w.WatchList() {
			live[d] = true
		}
		for d := range watched {
			if !live[d] {
				delete(watched, d)
			}
		}
		for d := range linkDirs {
			if !live[d] {
				delete(linkDirs, d)
			}
		}
		cfg := h.current.Load().Config
		// The configuration as it is now when it parses: after a reload
		// that failed in a new plugin_dir, the fix is made there.
		if c, err := h.readConfig(); err == nil {
			cfg = c
		}
		dir := cfg.Path(cfg.PluginDir)
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		path := h.configPath
		if path == "" {
			path = DefaultConfig // watched for it to appear
		}
		configFile, _ = filepath.Abs(path)
		h.add(w, watched, filepath.Dir(configFile))
		if dir != pluginDir {
			for d := range watched {
				if pluginDir != "" && within(d, pluginDir) {
					_ = w.Remove(d)
					delete(watched, d)
				}
			}
			pluginDir = dir
		}
		// The parent too, so the plugin directory is seen when it comes
		// back, or appears for the first time.
		h.add(w, watched, filepath.Dir(pluginDir))
		h.addTree(w, watched, pluginDir)
		h.followLinks(w, watched, linked, linkDirs, pluginDir, configFile)
	}
	sync()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	// done carries the status of the reload in flight; buffered, so a
	// reload that ends after Watch returned does not block.
	done := make(chan Status, 1)
	reloading, again := false, false
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			name, _ := filepath.Abs(ev.Name)
			inPlugins := within(name, pluginDir)
			// A directory above the plugin directory, removed and made again
			// (rm -rf, then a copy), brings the plugin directory back with it.
			above := !inPlugins && within(pluginDir, name)
			// Editors' temporary files are skipped inside the plugin
			// directory only: the configuration file and the directories
			// named in it may have hidden names (--config .awaken.toml).
			temp := inPlugins && name != pluginDir && ignored(filepath.Base(name))
			if !(inPlugins || above || name == configFile || throughLink(linked, name)) || temp || ev.Op == fsnotify.Chmod {
				continue
			}
			// A create replaces what was there (a directory or a link renamed
			// over it): a watch kept on the old one would see none of the new.
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Create) {
				for d := range watched {
					if within(d, name) {
						_ = w.Remove(d)
						delete(watched, d)
					}
				}
			}
			if inPlugins && ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(name); err == nil && fi.IsDir() {
					h.addTree(w, watched, name)
				}
			}
			if above && ev.Has(fsnotify.Create) {
				sync()
			}
			timer.Reset(Debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			h.log.Warn("watching for changes failed", "error", err.Error())
		case <-timer.C:
			if reloading {
				again = true
				continue
			}
			reloading = true
			// Watch a plugin_dir the configuration now names before the
			// build reads it, so a save there while it builds is seen.
			sync()
			go func() { done <- h.Reload(ctx) }()
		case st := <-done:
			reloading = false
			sync()
			if notify != nil {
				notify(st)
			}
			if again {
				again = false
				timer.Reset(Debounce)
			}
		}
	}
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	return dir != "" && (path == dir || strings.HasPrefix(path, dir+string(filepath.Separator)))
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
// recurse); dir may be a link to a directory (plugin_dir naming a
// release's link).
func (h *Host) addTree(w *fsnotify.Watcher, watched map[string]bool, dir string) {
	walkTree(dir, func(p string) { h.add(w, watched, p) }, nil)
}

// walkTree calls onDir with dir and every directory under it but hidden
// ones, and onLink (when set) with every symbolic link in them. dir may
// be a link to a directory: the trailing separator makes WalkDir walk what
// it points at, under its own name, where WalkDir(dir) would stop at the
// link.
func walkTree(dir string, onDir, onLink func(p string)) {
	_ = filepath.WalkDir(dir+string(filepath.Separator), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		p = filepath.Clean(p)
		switch {
		case d.IsDir():
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			onDir(p)
		case d.Type()&fs.ModeSymlink != 0 && onLink != nil:
			onLink(p)
		}
		return nil
	})
}

// maxLinkDepth is how many links to directories in a row followLinks
// follows, as many as a load does (luabridge).
const maxLinkDepth = 8

// followLinks sets linked to what the plugin directory's links and the
// configuration file's link point at outside the watched directories:
// files (true), and directories (false) with what they hold, through
// links in them too. It watches the directories that hold those files
// and every directory of those trees (linkDirs) unless watched already;
// a directory no link needs any more is let go.
func (h *Host) followLinks(w *fsnotify.Watcher, watched, linked, linkDirs map[string]bool, pluginDir, configFile string) {
	clear(linked)
	need := map[string]bool{}
	var scan func(dir string, depth int)
	follow := func(p string, depth int) {
		target, err := filepath.EvalSymlinks(p)
		if err != nil || target == p {
			return
		}
		if abs, err := filepath.Abs(target); err == nil {
			target = abs
		}
		if within(target, pluginDir) {
			return // watched with the plugin directory
		}
		fi, err := os.Stat(target)
		switch {
		case err != nil:
		case !fi.IsDir():
			linked[target] = true
			need[filepath.Dir(target)] = true
		case depth < maxLinkDepth:
			if _, seen := linked[target]; !seen {
				linked[target] = false
				scan(target, depth+1)
			}
		}
	}
	scan = func(dir string, depth int) {
		walkTree(dir, func(p string) {
			if depth > 0 {
				need[p] = true
			}
		}, func(p string) { follow(p, depth) })
	}
	follow(configFile, 0)
	scan(pluginDir, 0)
	for d := range linkDirs {
		if !need[d] {
			if !watched[d] {
				_ = w.Remove(d)
			}
			delete(linkDirs, d)
		}
	}
	for d := range need {
		if watched[d] || linkDirs[d] {
			continue
		}
		if err := w.Add(d); err != nil {
			h.log.Warn("cannot watch the directory of a linked file", "dir", d, "error", err.Error())
			continue
		}
		linkDirs[d] = true
	}
}

// throughLink reports whether name is a file a link points at, or inside
// a directory one does (linked, see followLinks), and not an editor's
// temporary file.
func throughLink(linked map[string]bool, name string) bool {
	if linked[name] {
		return true
	}
	if ignored(filepath.Base(name)) {
		return false
	}
	for target, file := range linked {
		if !file && within(name, target) {
			return true
		}
	}
	return false
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
