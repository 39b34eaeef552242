package luabridge_test

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// load builds a generation from in-memory plugin files.
func load(t testing.TB, files map[string]string, opts ...func(*luabridge.Loader)) (*luabridge.Generation, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, src := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(src)}
	}
	return loadFS(t, fsys, opts...)
}

// testHookTimeout is the hook budget of the generations load builds unless
// an option sets another: the default 100ms is wall-clock time, which a
// sound hook can pass under -race on a busy machine. A test about the
// budget sets its own (withTimeout), or the default (withTimeout(0)).
const testHookTimeout = 10 * time.Second

func loadFS(t testing.TB, fsys fs.FS, opts ...func(*luabridge.Loader)) (*luabridge.Generation, error) {
	t.Helper()
	l := &luabridge.Loader{Plugins: luabridge.Source{FS: fsys, Name: "scripts"},
		Limits: luabridge.Limits{HookTimeout: testHookTimeout}}
	for _, o := range opts {
		o(l)
	}
	g, err := l.Load(context.Background())
	if err == nil {
		t.Cleanup(g.Close)
	}
	return g, err
}

func mustLoad(t testing.TB, files map[string]string, opts ...func(*luabridge.Loader)) *luabridge.Generation {
	t.Helper()
	g, err := load(t, files, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// withTimeout sets the hook budget; 0 leaves the loader's default.
func withTimeout(d time.Duration) func(*luabridge.Loader) {
	return func(l *luabridge.Loader) { l.Limits.HookTimeout = d }
}

func runtimeFor(t testing.TB, g *luabridge.Generation, opts ...run.Option) *run.Runtime {
	t.Helper()
	rt, err := run.New(engine.New(g.Set), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// scripted answers with responses in order, then "done".
func scripted(rs ...model.Response) model.Model {
	i := 0
	return model.ModelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		if i >= len(rs) {
			return model.Response{Text: "done"}, nil
		}
		i++
		return rs[i-1], nil
	})
}
