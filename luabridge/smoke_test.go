package luabridge_test

import (
	"context"
	"os"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/model"
	"github.com/awaken-lua/awaken-lua/engine/run"
	"github.com/awaken-lua/awaken-lua/luabridge"
)

func TestSmoke(t *testing.T) {
	l := &luabridge.Loader{Plugins: luabridge.Source{FS: os.DirFS("testdata/basic"), Name: "scripts"}}
	g, err := l.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rt, err := run.New(engine.New(g.Set))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	m := model.ModelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		n++
		switch n {
		case 1:
			return model.Response{ToolCalls: []model.ToolCall{{Name: "shell", Args: map[string]any{"cmd": "ls"}}}}, nil
		case 2:
			return model.Response{ToolCalls: []model.ToolCall{{Name: "shell", Args: map[string]any{"cmd": "rm -rf /"}}}}, nil
		}
		return model.Response{Text: "done"}, nil
	})
	res, err := rt.Run(context.Background(), run.Request{Model: m, Tools: nil})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("termination %s state %v err %v", res.Termination, res.State["guard.calls"], res.Err)
}
