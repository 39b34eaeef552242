package luabridge_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/stdlib"
)

// A Loader's Stdlib has no default: an embedding program that enables a
// shipped plugin without setting it is told to set it, not shown an empty
// list of stdlib plugins; set, the plugin loads.
func TestEnableWithoutStdlibSaysToSetIt(t *testing.T) {
	plugins := luabridge.Source{Name: "policies", FS: fstest.MapFS{"p.lua": {Data: []byte(`return require("awaken").plugin {}`)}}}
	_, err := (&luabridge.Loader{Plugins: plugins, Enable: []string{"budget"}}).Load(context.Background())
	if !errors.Is(err, errs.ConfigInvalid) || !strings.Contains(err.Error(), "Loader.Stdlib is not set") {
		t.Fatalf("Load without Stdlib = %v; want config_invalid saying Loader.Stdlib is not set", err)
	}
	gen, err := (&luabridge.Loader{Plugins: plugins, Enable: []string{"budget"},
		Stdlib: luabridge.Source{Name: "stdlib", FS: stdlib.FS}}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gen.Close()
}
