package host

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/run"
)

// Bundles is where a replica finds the published plugin bundle (the
// PostgreSQL store: awaken-lua publish).
type Bundles interface {
	// Published is the published bundle's hash ("" while none is).
	Published(ctx context.Context) (string, error)
	// Bundle returns a bundle's files by slash-separated path.
	Bundle(ctx context.Context, hash string) (map[string][]byte, error)
	// Listen calls wake on each publication and after each reconnection.
	Listen(ctx context.Context, wake func()) error
}

// bundleRescan is how often a replica reads the published bundle besides
// the wake-ups: a lost notification costs at most this much delay.
const bundleRescan = time.Second

// FollowBundles makes the host load the published bundle, now and each
// time another is published, until ctx ends: the bundle's files are
// written once under cacheDir/<hash> and become the plugin directory. Runs
// in flight keep the generation they started on; new runs use the new
// one. onReload sees each reload's status.
func (h *Host) FollowBundles(ctx context.Context, b Bundles, cacheDir string, onReload func(Status)) error {
	h.mu.Lock()
	if h.follow == nil {
		h.follow = &bundleFollow{src: b, cache: cacheDir, pins: map[string]*Generation{}}
	}
	h.mu.Unlock()
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	go b.Listen(ctx, poke)
	t := time.NewTicker(bundleRescan)
	defer t.Stop()
	loaded := ""
	for {
		hash, err := b.Published(ctx)
		if err == nil && hash != "" && hash != loaded {
			if err := h.useBundle(ctx, b, cacheDir, hash, onReload); err != nil {
				h.log.Warn("cannot load the published plugin bundle; the current generation stays", "bundle", hash, "error", err.Error())
			} else {
				loaded = hash
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-t.C:
		}
	}
}

func (h *Host) useBundle(ctx context.Context, b Bundles, cacheDir, hash string, onReload func(Status)) error {
	dir, err := fetchBundle(ctx, b, cacheDir, hash)
	if err != nil {
		return err
	}
	h.bundle.Store(&hash)
	h.pluginDir.Store(&dir)
	st := h.Reload(ctx)
	if onReload != nil {
		onReload(st)
	}
	if st.LastResult == "failed" {
		return fmt.Errorf("the bundle does not load: %s", strings.Join(st.Errors, "; "))
	}
	h.log.Info("published plugin bundle loaded", "bundle", hash[:12], "generation", st.Generation)
	return nil
}

// fetchBundle returns the directory of a bundle's files, written under
// cacheDir the first time.
func fetchBundle(ctx context.Context, b Bundles, cacheDir, hash string) (string, error) {
	dir := filepath.Join(cacheDir, hash)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	files, err := b.Bundle(ctx, hash)
	if err != nil {
		return "", err
	}
	return dir, writeBundle(cacheDir, dir, files)
}

// bundleFollow is what FollowBundles reads from, and the generations built
// for runs that started on a bundle the host no longer has current.
type bundleFollow struct {
	src   Bundles
	cache string
	pins  map[string]*Generation // by bundle hash; kept until Close
}

// bundleFor is the bundle the generation built from cfg comes from: the
// followed bundle when cfg's plugin directory is its directory.
func (h *Host) bundleFor(cfg *config.Config) string {
	hash, dir := h.bundle.Load(), h.pluginDir.Load()
	if hash == nil || dir == nil {
		return ""
	}
	if abs, err := filepath.Abs(*dir); err == nil && abs == cfg.PluginDir {
		return *hash
	}
	return ""
}

// AcquireBundle pins a generation of a published bundle for a run that
// started on it: the current generation when it comes from that bundle,
// else one built from the bundle (kept for later runs until Close). A
// replica restores a run on the plugins it started with this way.
func (h *Host) AcquireBundle(ctx context.Context, hash string) (*Generation, error) {
	g := h.Acquire()
	if g.Runtime.Bundle() == hash {
		return g, nil
	}
	g.Release()
	h.mu.Lock()
	f := h.follow
	var pinned *Generation
	if f != nil {
		pinned = f.pins[hash]
	}
	h.mu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("this replica follows no published bundles, so it cannot load bundle %s", hash)
	}
	if pinned == nil {
		dir, err := fetchBundle(ctx, f.src, f.cache, hash)
		if err != nil {
			return nil, err
		}
		cfg, err := h.readConfig()
		if err != nil {
			return nil, err
		}
		abs, _ := filepath.Abs(dir)
		cfg.PluginDir = abs
		lg, err := h.opts.loader(cfg, luabridge.Source{FS: os.DirFS(abs), Name: filepath.Base(abs)}, h.log).Load(ctx)
		if err != nil {
			return nil, err
		}
		g, err := h.assemble(cfg, lg, "bundle:"+hash)
		if err != nil {
			lg.Close()
			return nil, err
		}
		g.Runtime, _ = g.Runtime.Derive(run.WithBundle(hash))
		h.mu.Lock()
		if other := f.pins[hash]; other != nil { // built twice at once: keep one
			h.mu.Unlock()
			lg.Close()
			pinned = other
		} else {
			f.pins[hash] = g
			h.mu.Unlock()
			pinned = g
		}
	}
	pinned.Lua.Acquire()
	return pinned, nil
}

// closePins closes the generations built for old bundles.
func (h *Host) closePins() {
	h.mu.Lock()
	f := h.follow
	h.mu.Unlock()
	if f == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, g := range f.pins {
		g.Lua.Retire()
	}
}

// writeBundle writes files into dir, through a temporary directory renamed
// into place, so a crash never leaves a half-written bundle.
func writeBundle(cacheDir, dir string, files map[string][]byte) error {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(cacheDir, ".bundle-")
	if err != nil {
		return err
	}
	for p, b := range files {
		if !fs.ValidPath(p) {
			os.RemoveAll(tmp)
			return fmt.Errorf("the bundle names a file outside its directory: %q", p)
		}
		dst := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			os.RemoveAll(tmp)
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			os.RemoveAll(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(dir); serr == nil {
			return nil // another follower wrote it first
		}
		return err
	}
	return nil
}

// ReadBundle reads a plugin directory as a bundle: its .lua files and the
// files beside them, by slash-separated path (hidden files left out).
func ReadBundle(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("the plugin directory %s has no files to publish", dir)
	}
	return files, nil
}
