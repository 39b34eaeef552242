// Package luabridge turns Lua plugins into engine plugins (docs/design.md): the
// awaken module, a sandbox with limits, pools of warm Lua states, and the
// conversions between Lua and Go values.
//
// A Loader reads a plugin directory (and stdlib/) into a Generation: every
// plugin compiled once, registered, and validated. Hooks run on pooled Lua
// states that share the compiled code.
package luabridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/run"
)

// Source is a tree of Lua files with the name its chunks are shown under
// ("scripts", "stdlib"), so errors read "scripts/guard.lua:14".
type Source struct {
	FS   fs.FS
	Name string
}

// Loader loads generations. Plugins is required; the zero value of every
// other field is a sensible default, Stdlib's being none.
type Loader struct {
	// Plugins is the plugin directory: every name.lua and name/init.lua in
	// it is a plugin (files ending in _test.lua are tests, not plugins).
	Plugins Source
	// Stdlib holds the shipped plugins and modules; its plugins load only
	// when Enable names them. The zero value has none: set
	// Source{Name: "stdlib", FS: stdlib.FS} for the ones awaken.toml loads.
	Stdlib Source
	Enable []string
	// Go plugins are registered after the runtime built-ins, before Lua.
	Go     []plugin.Plugin
	Limits Limits
	// PoolSize bounds the warm states per plugin (default 4 x GOMAXPROCS).
	PoolSize int
	Log      *slog.Logger
	// preload adds modules that require() returns (tests add one).
	preload map[string]preloadFunc
}

// preloadFunc makes a module that require() returns in one state.
type preloadFunc func(L *lua.LState, inst *instance) lua.LValue

// Generation is one load of the plugins: compiled code, the plugin set, and
// the warm states. Runs pin it (Acquire/Release); Close releases the states
// once no run uses it.
type Generation struct {
	ID       string
	Hash     string
	LoadedAt time.Time
	Set      *plugin.Set

	plugins []*luaPlugin
	limits  Limits
	log     *slog.Logger
	sources []Source
	preload map[string]preloadFunc
	set     *plugin.Set
	globs   globCache
	regexps regexpCache

	protoMu sync.Mutex
	protos  map[string]*lua.FunctionProto

	refs    atomic.Int64
	closing atomic.Bool
	closed  sync.Once
}

// luaPlugin is one Lua plugin of a generation. Its fields are set while
// it loads (adopt) and read-only afterwards.
type luaPlugin struct {
	gen     *Generation
	id      string
	file    string // the chunk name, e.g. "scripts/guard.lua"
	root    Source
	proto   *lua.FunctionProto
	pool    *pool
	timeout time.Duration
	// What the first run of the file registered: every state's run must
	// register the same (sameRegistrations).
	regs []registration
	keys map[string]*state.Key
	// validateFn and prepareFn index awaken.plugin{validate, prepare}
	// (-1 for none).
	validateFn, prepareFn int
	defaultConfig         any
	prepared              preparedCache
}

// PluginFile is a plugin found in a source.
type PluginFile struct {
	ID     string
	Path   string // slash path inside the source
	Source Source
}

// Chunk is the name errors show for the file.
func (f PluginFile) Chunk() string { return path.Join(f.Source.Name, f.Path) }

// Discover lists the plugins of a source: name.lua and name/init.lua, not
// *_test.lua, sorted by id.
func Discover(src Source) ([]PluginFile, error) {
	if src.FS == nil {
		return nil, nil
	}
	entries, err := fs.ReadDir(src.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("read plugin directory %s: %w", src.Name, err)
	}
	var out []PluginFile
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		if e.IsDir() {
			if name == "types" {
				continue
			}
			if _, err := fs.Stat(src.FS, path.Join(name, "init.lua")); err == nil {
				out = append(out, PluginFile{ID: name, Path: path.Join(name, "init.lua"), Source: src})
			}
			continue
		}
		if strings.HasSuffix(name, ".lua") && !strings.HasSuffix(name, "_test.lua") {
			out = append(out, PluginFile{ID: strings.TrimSuffix(name, ".lua"), Path: name, Source: src})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Load builds a generation: it compiles and registers every plugin of the
// plugin directory and the enabled stdlib plugins, and builds the plugin
// set with the runtime built-ins. Every problem is reported (an errs.List,
// positions first); on error nothing is left open.
func (l *Loader) Load(ctx context.Context) (*Generation, error) {
	// The plugins are found in the files as this load reads them, so a
	// plugin file and the modules it requires come from one read.
	sl, err := l.sealed()
	if err != nil {
		return nil, err
	}
	files, err := sl.files()
	if err != nil {
		return nil, err
	}
	return sl.LoadFiles(ctx, files)
}

// sealed is a copy of l whose plugin directory and stdlib are sealed.
func (l *Loader) sealed() (*Loader, error) {
	lim := l.Limits.withDefaults()
	c := *l
	var err error
	if c.Plugins, err = seal(l.Plugins, lim); err != nil {
		return nil, err
	}
	if c.Stdlib, err = seal(l.Stdlib, lim); err != nil {
		return nil, err
	}
	return &c, nil
}

func (l *Loader) files() ([]PluginFile, error) {
	files, err := Discover(l.Plugins)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, f := range files {
		have[f.ID] = true
	}
	if len(l.Enable) > 0 {
		std, err := Discover(l.Stdlib)
		if err != nil {
			return nil, err
		}
		byID := map[string]PluginFile{}
		var ids []string
		for _, f := range std {
			byID[f.ID] = f
			ids = append(ids, f.ID)
		}
		var list errs.List
		for _, id := range l.Enable {
			if have[id] {
				continue // the plugin directory's own plugin of that name wins
			}
			f, ok := byID[id]
			if !ok {
				where := "not in stdlib (and no plugin directory is configured)"
				if l.Plugins.Name != "" {
					where = "neither in " + l.Plugins.Name + " nor in stdlib"
				}
				// The suggestion is from both places: a typo of the plugin
				// directory's own plugin ("polcy") is the commoner one.
				candidates := slices.Concat(ids, slices.Sorted(maps.Keys(have)))
				shipped := "stdlib plugins: " + strings.Join(ids, ", ")
				if l.Stdlib.FS == nil {
					shipped = "Loader.Stdlib is not set; the shipped plugins are luabridge.Source{Name: \"stdlib\", FS: stdlib.FS}"
				}
				e := errs.New(errs.ConfigInvalid, "plugin %q is %s%s; %s",
					id, where, errs.DidYouMean(id, candidates), shipped)
				e.Key = id // the host places it where the configuration names the plugin
				list.Add(e)
				continue
			}
			have[id] = true
			files = append(files, f)
		}
		if err := list.Err(); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// LoadFiles builds a generation from the given plugin files. The plugin
// directory, stdlib and the files' own sources are sealed first (unless
// they are already): the generation compiles its plugins and every module
// it requires from the bytes read now, and its hash covers them.
func (l *Loader) LoadFiles(ctx context.Context, files []PluginFile) (*Generation, error) {
	lim := l.Limits.withDefaults()
	log := l.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sl, err := l.sealed()
	if err != nil {
		return nil, err
	}
	roots := &sealedSources{lim: lim, raw: []Source{l.Plugins, l.Stdlib}, seals: []Source{sl.Plugins, sl.Stdlib}}
	g := &Generation{limits: lim, log: log, protos: map[string]*lua.FunctionProto{}, preload: l.preload,
		sources: []Source{sl.Plugins, sl.Stdlib}, LoadedAt: time.Now()}
	poolSize := l.PoolSize
	if poolSize <= 0 {
		poolSize = 4 * runtime.GOMAXPROCS(0)
	}
	h := sha256.New()
	var list errs.List
	var regs []*plugin.Registrar
	var firsts []*instance
	cleanup := func() {
		for _, inst := range firsts {
			inst.close()
		}
	}
	for _, f := range files {
		root, err := roots.get(f.Source)
		if err != nil {
			list.Add(err)
			continue
		}
		src, err := fs.ReadFile(root.FS, f.Path)
		if err != nil {
			list.Add(&errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: f.Chunk()}, Msg: err.Error()})
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f.Chunk(), len(src))
		h.Write(src)
		proto, err := compile(src, f.Chunk())
		if err != nil {
			list.Add(err)
			continue
		}
		p := &luaPlugin{gen: g, id: f.ID, file: f.Chunk(), root: root, proto: proto}
		reg := plugin.NewRegistrar(f.ID, errs.Pos{File: f.Chunk()})
		first, err := p.newInstance(ctx, reg)
		if err != nil {
			list.Add(err)
			continue
		}
		p.adopt(first)
		// The file runs a second time now, so one that registers
		// differently each time it runs fails here rather than when the
		// pool first grows. That state is not kept: calls go to the first
		// until more are needed, as they would without the check.
		second, err := p.spawn(ctx)
		if err != nil {
			first.close()
			list.Add(err)
			continue
		}
		second.close()
		p.pool = newPool(poolSize, func() (*instance, error) { return p.spawn(context.Background()) })
		firsts = append(firsts, first)
		g.plugins = append(g.plugins, p)
		regs = append(regs, reg)
	}
	goRegs, err := plugin.Registrars(append([]plugin.Plugin{run.Builtins()}, l.Go...)...)
	list.Add(err)
	// Build even when some plugins failed, so problems between the others
	// (a key declared twice, say) are reported in the same pass.
	set, err := plugin.Build(append(goRegs, regs...)...)
	list.Add(err)
	if err := list.Err(); err != nil {
		cleanup()
		list.Sort()
		return nil, list.Err()
	}
	g.Set, g.set = set, set
	for i, p := range g.plugins {
		if in, ok := set.Plugin(p.id); ok && in.Config != nil {
			p.defaultConfig, _ = in.Config.Conform(map[string]any{})
		}
		p.pool.add(firsts[i])
	}
	// A plugin without a config schema has one config, the empty one:
	// what its prepare makes of it is made now, so a failing prepare
	// fails the load.
	for _, p := range g.plugins {
		if in, _ := set.Plugin(p.id); in.Config == nil && p.prepareFn >= 0 {
			if err := p.configure(nil); err != nil {
				list.Add(err)
			}
		}
	}
	if err := list.Err(); err != nil {
		g.close()
		list.Sort()
		return nil, list.Err()
	}
	// Every module the plugins could require.
	for _, r := range roots.seals {
		h.Write(digestOf(r))
	}
	g.Hash = hex.EncodeToString(h.Sum(nil))
	g.ID = g.Hash[:12]
	return g, nil
}

// compile parses and compiles a chunk once; states share the prototype.
func compile(src []byte, chunk string) (*lua.FunctionProto, error) {
	stmts, err := parse.Parse(strings.NewReader(string(src)), chunk)
	if err != nil {
		var pe *parse.Error
		if asParseErr(err, &pe) {
			return nil, syntaxError(errs.PluginLoadFailed, chunk, src, pe)
		}
		return nil, &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: chunk}, Msg: "syntax error: " + err.Error()}
	}
	stmts, err = rewriteConcat(stmts, chunk)
	if err != nil {
		return nil, err
	}
	proto, err := lua.Compile(stmts, chunk)
	if err != nil {
		p, msg := splitWhere(err.Error())
		if !p.IsValid() {
			p = errs.Pos{File: chunk}
		}
		return nil, &errs.Error{Code: errs.PluginLoadFailed, Pos: p, Msg: msg}
	}
	return proto, nil
}

// syntaxError reports a parse error once ("syntax error near 'x'", not
// "syntax error: syntax error near 'x'") and at a line: the parser gives
// line 0 for what it only notices at the end of the file, which is then
// reported at the file's last line.
func syntaxError(code errs.Code, chunk string, src []byte, pe *parse.Error) *errs.Error {
	msg := "syntax error"
	if pe.Message != "" && pe.Message != "syntax error" {
		msg += ": " + pe.Message
	}
	if pe.Token != "" {
		msg += " near '" + pe.Token + "'"
	}
	pos := errs.Pos{File: chunk, Line: pe.Pos.Line, Col: pe.Pos.Column}
	if pos.Line <= 0 {
		pos.Line, pos.Col = max(1, len(strings.Split(strings.TrimRight(string(src), "\n \t\r"), "\n"))), 0
		msg += " at the end of the file: a statement, string, table or block is not finished"
	}
	return &errs.Error{Code: code, Pos: pos, Msg: msg}
}

func asParseErr(err error, pe **parse.Error) bool {
	x, ok := err.(*parse.Error)
	if ok {
		*pe = x
	}
	return ok
}

// module finds and compiles a required module: first in the requiring
// plugin's own source, then the plugin directory, then stdlib/. The
// sources of a loaded generation are sealed, so this reads what the load
// read, never the disk.
func (g *Generation) module(name string, first Source) (*lua.FunctionProto, error) {
	paths, err := modulePaths(name)
	if err != nil {
		return nil, err
	}
	sources := append([]Source{first}, g.sources...)
	for _, src := range sources {
		for _, p := range paths {
			key := src.Name + "\x00" + p
			g.protoMu.Lock()
			proto, ok := g.protos[key]
			g.protoMu.Unlock()
			if ok {
				return proto, nil
			}
			b, found := readFile(src.FS, p)
			if !found {
				continue
			}
			proto, err := compile(b, path.Join(src.Name, p))
			if err != nil {
				return nil, err
			}
			g.protoMu.Lock()
			g.protos[key] = proto
			g.protoMu.Unlock()
			return proto, nil
		}
	}
	return nil, fmt.Errorf("require %q: no %s in the plugin directory or stdlib/ as this generation loaded them (a module added since is found from the next reload on)", name, strings.Join(paths, " or "))
}

// Acquire pins the generation for a run; Release unpins it.
func (g *Generation) Acquire() { g.refs.Add(1) }

// Release unpins the generation; the last release of a retired generation
// closes it.
func (g *Generation) Release() {
	if g.refs.Add(-1) == 0 && g.closing.Load() {
		g.close()
	}
}

// Retire marks the generation as replaced: it closes once no run holds it.
func (g *Generation) Retire() {
	g.closing.Store(true)
	if g.refs.Load() == 0 {
		g.close()
	}
}

// Close closes the generation's states now.
func (g *Generation) Close() { g.close() }

func (g *Generation) close() {
	g.closed.Do(func() {
		for _, p := range g.plugins {
			p.pool.close()
		}
	})
}

// Warm makes up to n more states for every plugin now, so the first runs
// do not pay for them (a state costs tens of microseconds to make).
func (g *Generation) Warm(n int) error {
	for _, p := range g.plugins {
		var got []*instance
		for i := 0; i < n; i++ {
			p.pool.mu.Lock()
			full := p.pool.live >= p.pool.max
			p.pool.mu.Unlock()
			if full {
				break
			}
			inst, err := p.pool.get(context.Background())
			if err != nil {
				return err
			}
			got = append(got, inst)
		}
		for _, inst := range got {
			p.pool.put(inst, false)
		}
	}
	return nil
}

// Stats reports the live and free states of each plugin's pool.
func (g *Generation) Stats() map[string][2]int {
	out := map[string][2]int{}
	for _, p := range g.plugins {
		live, free := p.pool.stats()
		out[p.id] = [2]int{live, free}
	}
	return out
}

// PluginIDs lists the Lua plugins of the generation in load order.
func (g *Generation) PluginIDs() []string {
	var out []string
	for _, p := range g.plugins {
		out = append(out, p.id)
	}
	return out
}

// PluginFileOf returns the chunk name of a Lua plugin.
func (g *Generation) PluginFileOf(id string) string {
	for _, p := range g.plugins {
		if p.id == id {
			return p.file
		}
	}
	return ""
}
