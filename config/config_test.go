package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// fixtures lists testdata/*.toml.
func fixtures(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return files
}

// same compares configs as Parse makes them, leaving out the source index
// and hash (of the bytes, which a round trip rewrites).
func same(a, b *Config) bool {
	x, y := *a, *b
	x.idx, y.idx = nil, nil
	x.Hash, y.Hash = "", ""
	return reflect.DeepEqual(&x, &y)
}

// TestFixtures parses each testdata/NAME.toml as awaken.toml and compares
// the rendered config, or the error text, with testdata/NAME.golden. Run
// with -update to rewrite the golden files.
func TestFixtures(t *testing.T) {
	for _, file := range fixtures(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".toml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			c, err := Parse(data, "awaken.toml")
			if err != nil {
				got = "error:\n" + err.Error() + "\n"
			} else {
				got = c.Render()
			}
			golden := strings.TrimSuffix(file, ".toml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestRoundTrip checks that Render's text parses to an equal Config.
func TestRoundTrip(t *testing.T) {
	for _, file := range fixtures(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(data, "awaken.toml")
		if err != nil {
			continue // an error fixture
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			text := c.Render()
			back, err := Parse([]byte(text), "awaken.toml")
			if err != nil {
				t.Fatalf("the rendered config does not parse: %v\n%s", err, text)
			}
			if !same(c, back) {
				t.Fatalf("round trip changed the config:\n%s", text)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c, err := Parse(nil, "conf/awaken.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.File, want.Dir = "conf/awaken.toml", "conf"
	if !same(c, want) {
		t.Fatalf("Parse(empty) = %+v, want %+v", c, want)
	}
	a := c.Agents[DefaultAgent]
	if a == nil || a.Plugins != nil || !reflect.DeepEqual(a.Tools, []string{"fs_read", "fs_list"}) || a.PluginConfigs != nil {
		t.Fatalf("default agent = %+v", a)
	}
	if c.Runtime.HookTimeout != Duration(100*time.Millisecond) || c.Runtime.MaxValueSize != MiB || c.Runtime.MaxStateSize != 16*MiB ||
		c.Server.BodyLimit != MiB ||
		c.Model.Timeout != Duration(time.Minute) || c.Tools.ShellTimeout != Duration(10*time.Second) ||
		c.Store.Kind != StoreMemory || c.Store.Path != ".awaken/store" || c.Store.MaxThreads != 10000 {
		t.Fatalf("defaults: %+v", c)
	}
	// Default returns a fresh value each time.
	Default().Agents[DefaultAgent].Tools[0] = "changed"
	if Default().Agents[DefaultAgent].Tools[0] != "fs_read" {
		t.Fatal("Default shares its tool list")
	}
}

func TestFull(t *testing.T) {
	c := mustLoad(t, "testdata/full.toml")
	if c.File != "testdata/full.toml" || c.Dir != "testdata" {
		t.Fatalf("File, Dir = %q, %q", c.File, c.Dir)
	}
	if c.PluginDir != "plugins" || c.Runtime != (Runtime{MaxSteps: 8, MaxPhaseRounds: 4, HookTimeout: Duration(250 * time.Millisecond),
		MaxValueSize: 512 * KiB, MaxStateSize: 8 * MiB}) {
		t.Fatalf("runtime: %+v", c.Runtime)
	}
	if c.Model != (Model{Kind: ModelOpenAI, BaseURL: "http://localhost:11434/v1",
		Model: "llama3.1", APIKeyEnv: "OLLAMA_KEY", Timeout: Duration(90 * time.Second), MaxRetries: 0}) {
		t.Fatalf("model: %+v", c.Model)
	}
	if c.Server != (Server{Addr: "0.0.0.0:9000", TokenEnv: "MY_TOKEN", BodyLimit: 512 * KiB, MaxConcurrent: 8, HookAgent: DefaultAgent, SessionHistory: 200, SessionHistorySize: 2 * MiB, MaxRuns: 500}) {
		t.Fatalf("server: %+v", c.Server)
	}
	if c.Store != (Store{Kind: StoreFile, Path: ".awaken/store", MaxThreads: 10000, DSNEnv: "AWAKEN_PG_DSN", StatementTimeout: defaultStmtTimeout}) || c.Audit.Path != "" {
		t.Fatalf("store, audit: %+v %+v", c.Store, c.Audit)
	}
	if j := c.Journal; j.Kind != JournalFile || j.Path != "journal" || j.MaxFileSize != 8*MiB || j.MaxAge != Duration(24*time.Hour) ||
		!reflect.DeepEqual(j.Mask, []string{"password", "headers.authorization"}) {
		t.Fatalf("journal: %+v", j)
	}
	if c.Shadow != (Shadow{PluginDir: "candidate", Config: "candidate.toml"}) {
		t.Fatalf("shadow: %+v", c.Shadow)
	}
	if c.Tools != (Tools{Root: "work", Shell: true, ShellTimeout: Duration(90 * time.Second)}) {
		t.Fatalf("tools: %+v", c.Tools)
	}
	d := c.Agents["default"]
	if d.SystemPrompt != "You are careful.\nSay \"done\" when done." || !reflect.DeepEqual(d.Plugins, []string{"permission", "budget"}) ||
		d.Tools == nil || len(d.Tools) != 0 || d.MaxSteps != 4 || d.Model != "llama3.2" || d.Temperature == nil || *d.Temperature != 0.2 ||
		d.PluginConfigs != nil {
		t.Fatalf("agent default: %+v", d)
	}
	ops := c.Agents["ops"]
	wantOps := map[string]any{"permission": map[string]any{"default": "deny",
		"rules": []any{map[string]any{"tool": "shell", "action": "ask"}}}}
	if !reflect.DeepEqual(ops.Plugins, []string{"budget", "permission"}) || !reflect.DeepEqual(ops.PluginConfigs, wantOps) ||
		*ops.Temperature != 1 || ops.ID != "ops" {
		t.Fatalf("agent ops: %+v", ops)
	}
	wantBudget := map[string]any{"max_calls": 20.0, "ratio": 0.75, "limits": map[string]any{"shell": 3.0, "fs.write": 10.0}}
	if !reflect.DeepEqual(c.Plugins["budget"], wantBudget) {
		t.Fatalf("plugins.budget = %#v", c.Plugins["budget"])
	}
	if got := c.Enabled(); !reflect.DeepEqual(got, []string{"budget", "permission"}) {
		t.Fatalf("Enabled = %v", got)
	}
}

func mustLoad(t *testing.T, path string) *Config {
	t.Helper()
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAgentPlugins covers both forms of an agent's plugins.
func TestAgentPlugins(t *testing.T) {
	tests := []struct {
		name        string
		src         string
		wantFilter  []string
		wantConfigs map[string]any
		wantErr     string
	}{
		{name: "list", src: `plugins = ["b", "a"]`, wantFilter: []string{"b", "a"}},
		{name: "empty list activates all", src: `plugins = []`},
		{name: "missing activates all", src: `model = "m"`},
		{name: "empty table activates all", src: `plugins = {}`},
		{name: "table", src: "[agents.x.plugins.a]\nk = 1\n[agents.x.plugins.b]\n",
			wantFilter: []string{"a", "b"}, wantConfigs: map[string]any{"a": map[string]any{"k": 1.0}, "b": map[string]any{}}},
		{name: "table with true", src: "plugins.z = true\nplugins.a = { k = \"v\" }",
			wantFilter: []string{"a", "z"}, wantConfigs: map[string]any{"a": map[string]any{"k": "v"}}},
		{name: "false", src: "plugins.z = false",
			wantErr: `awaken.toml:2: config_invalid: agents.x.plugins.z: set it to true to activate plugin "z" with its [plugins.z] config, or remove it`},
		{name: "duplicate", src: `plugins = ["a", "a"]`,
			wantErr: `awaken.toml:2: config_invalid: agents.x.plugins: plugin "a" is listed twice`},
		{name: "not a string", src: `plugins = ["a", 1]`,
			wantErr: `awaken.toml:2: config_invalid: agents.x.plugins: item 2: expected a plugin id, got an integer`},
		{name: "empty id", src: `plugins = [""]`,
			wantErr: `awaken.toml:2: config_invalid: agents.x.plugins: item 1: a plugin id must not be empty`},
		{name: "array of tables", src: "[[agents.x.plugins]]\nid = \"a\"",
			wantErr: `awaken.toml:2: config_invalid: agents.x.plugins: expected a list of plugin ids (the activation filter) or a table of per-plugin configs, got an array`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := "[agents.x]\n" + tc.src + "\n"
			if strings.HasPrefix(tc.src, "[agents") {
				src = tc.src + "\n" // declares agents.x itself
			}
			c, err := Parse([]byte(src), "awaken.toml")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := c.Agents["x"]
			if !reflect.DeepEqual(a.Plugins, tc.wantFilter) || !reflect.DeepEqual(a.PluginConfigs, tc.wantConfigs) {
				t.Fatalf("Plugins = %#v, PluginConfigs = %#v", a.Plugins, a.PluginConfigs)
			}
			if len(c.Agents) != 1 {
				t.Fatalf("agents = %v, want only x", c.AgentIDs())
			}
		})
	}
}

func TestErrorsAreListsOfConfigInvalid(t *testing.T) {
	_, err := Load("testdata/bad_values.toml")
	var list errs.List
	if !errors.As(err, &list) || len(list) < 10 {
		t.Fatalf("want every problem, got %v", err)
	}
	for i, e := range list {
		if e.Code != errs.ConfigInvalid || e.Pos.File != "testdata/bad_values.toml" || e.Pos.Line == 0 {
			t.Errorf("problem %d: %#v", i, e)
		}
		if i > 0 && list[i-1].Pos.Line > e.Pos.Line {
			t.Errorf("not sorted by line: %v", err)
		}
	}
}

// TestSecretsNeverEchoed checks that no message repeats a value that may be
// a secret.
func TestSecretsNeverEchoed(t *testing.T) {
	for _, file := range []string{"testdata/secrets.toml", "testdata/bad_values.toml"} {
		_, err := Load(file)
		if err == nil {
			t.Fatalf("%s: no error", file)
		}
		for _, secret := range []string{"sk-proj", "hunter2", "hunter3", "sk-1"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error shows %q:\n%v", file, secret, err)
			}
		}
	}
}

func TestLoad(t *testing.T) {
	t.Run("missing file", func(t *testing.T) {
		_, err := Load("testdata/nope.toml")
		if err == nil || errs.CodeOf(err) != errs.ConfigInvalid ||
			!strings.HasPrefix(err.Error(), "testdata/nope.toml: config_invalid: cannot read the configuration file: ") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no file means defaults", func(t *testing.T) {
		c := mustLoad(t, "")
		if !same(c, Default()) || c.Path("scripts") != "scripts" {
			t.Fatalf("Load(\"\") = %+v", c)
		}
	})
}

func TestPath(t *testing.T) {
	c := &Config{Dir: filepath.Join("etc", "awaken")}
	abs, _ := filepath.Abs("x")
	for rel, want := range map[string]string{
		"":        "",
		"scripts": filepath.Join("etc", "awaken", "scripts"),
		"../x":    filepath.Join("etc", "x"),
		abs:       abs,
	} {
		if got := c.Path(rel); got != want {
			t.Errorf("Path(%q) = %q, want %q", rel, got, want)
		}
	}
}

func TestEnabled(t *testing.T) {
	c := mustLoad(t, "testdata/agents_table.toml")
	if got, want := c.Enabled(), []string{"budget", "permission", "redact", "reminder"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Enabled = %v, want %v", got, want)
	}
	if got := Default().Enabled(); len(got) != 0 {
		t.Fatalf("Default().Enabled = %v", got)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in, want string
		err      bool
	}{
		{in: "100ms", want: "100ms"},
		{in: "1m30s", want: "90s"},
		{in: "60s", want: "1m"},
		{in: "1.5h", want: "90m"},
		{in: "1500us", want: "1500us"},
		{in: "7ns", want: "7ns"},
		{in: "2h", want: "2h"},
		{in: " 10s ", want: "10s"},
		{in: "0", want: "0s"},
		{in: "10", err: true},
		{in: "soon", err: true},
		{in: "", err: true},
	}
	for _, tc := range tests {
		var d Duration
		err := d.UnmarshalText([]byte(tc.in))
		if (err != nil) != tc.err {
			t.Errorf("UnmarshalText(%q) error = %v", tc.in, err)
			continue
		}
		if err != nil {
			continue
		}
		if got := d.String(); got != tc.want {
			t.Errorf("%q: String = %q, want %q", tc.in, got, tc.want)
		}
		var back Duration
		if err := back.UnmarshalText([]byte(d.String())); err != nil || back != d {
			t.Errorf("%q: String does not read back: %v, %v", tc.in, back, err)
		}
	}
}

func TestSize(t *testing.T) {
	tests := []struct {
		in   string
		want Size
		str  string
		err  bool
	}{
		{in: "1MiB", want: MiB, str: "1MiB"},
		{in: "512KiB", want: 512 * KiB, str: "512KiB"},
		{in: "1048576", want: MiB, str: "1MiB"},
		{in: "1000", want: 1000, str: "1000"},
		{in: "2 gib", want: 2 * GiB, str: "2GiB"},
		{in: "1kB", want: 1000, str: "1000"},
		{in: "3MB", want: 3_000_000, str: "3000000"},
		{in: "1536KiB", want: 1536 * KiB, str: "1536KiB"},
		{in: "7B", want: 7, str: "7"},
		{in: "0", want: 0, str: "0"},
		{in: "1.5MiB", err: true},
		{in: "-1", err: true},
		{in: "MiB", err: true},
		{in: "1 TB", err: true},
		{in: "99999999999GiB", err: true},
		{in: "99999999999999999999", err: true},
	}
	for _, tc := range tests {
		var s Size
		err := s.UnmarshalText([]byte(tc.in))
		if (err != nil) != tc.err {
			t.Errorf("UnmarshalText(%q) error = %v", tc.in, err)
			continue
		}
		if err != nil {
			continue
		}
		if s != tc.want || s.String() != tc.str {
			t.Errorf("%q: got %d (%s), want %d (%s)", tc.in, s, s, tc.want, tc.str)
		}
		var back Size
		if err := back.UnmarshalText([]byte(s.String())); err != nil || back != s {
			t.Errorf("%q: String does not read back", tc.in)
		}
	}
}

func TestRenderNumbers(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0", 3: "3", -4: "-4", 0.75: "0.75", 1e300: "1e+300", 9007199254740992: "9007199254740992",
		9007199254740994: "9.007199254740994e+15", 1e-7: "1e-07",
	} {
		if got := formatNumber(f); got != want {
			t.Errorf("formatNumber(%v) = %s, want %s", f, got, want)
		}
	}
}

// TestRenderGoBuilt checks that a Config built in Go, with values Parse
// would not make (ints, nulls), still renders to valid TOML.
func TestRenderGoBuilt(t *testing.T) {
	c := Default()
	c.Plugins = map[string]any{"p": map[string]any{"n": 3, "list": []string{"a"}, "gone": nil, "odd key": map[string]any{}}}
	c.Agents["default"].PluginConfigs = map[string]any{"p": map[string]any{"x": int64(1)}}
	c.Agents["default"].Plugins = []string{"p", "q"}
	c.Store.MaxThreads = 0 // the store's default
	back, err := Parse([]byte(c.Render()), "")
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Render())
	}
	want := map[string]any{"n": 3.0, "list": []any{"a"}, "odd key": map[string]any{}}
	if !reflect.DeepEqual(back.Plugins["p"], want) || !reflect.DeepEqual(back.Agents["default"].Plugins, []string{"p", "q"}) {
		t.Fatalf("got %#v, %#v", back.Plugins["p"], back.Agents["default"].Plugins)
	}
	if back.Store.MaxThreads != defaultMaxThreads {
		t.Fatalf("max_threads = %d", back.Store.MaxThreads)
	}
}

func TestStoreMaxThreads(t *testing.T) {
	for _, tc := range []struct {
		name string
		toml string
		want int    // MaxThreads when it parses
		err  string // the error, file:line included, when it does not
	}{
		{"default", "", 10000, ""},
		{"default with kind", "[store]\nkind = \"memory\"\n", 10000, ""},
		{"set", "[store]\nmax_threads = 250\n", 250, ""},
		{"one", "[store]\nkind = \"memory\"\nmax_threads = 1\n", 1, ""},
		{"file store without it", "[store]\nkind = \"file\"\n", 10000, ""},
		{"negative", "[store]\nkind = \"memory\"\nmax_threads = -5\n", 0,
			"awaken.toml:3: config_invalid: store.max_threads: must be at least 1, got -5: it is how many threads the memory store keeps " +
				"before evicting the least recently used; leave it out for the default 10000"},
		{"zero", "[store]\nmax_threads = 0\n", 0, "awaken.toml:2: config_invalid: store.max_threads: must be at least 1, got 0"},
		{"not an integer", "[store]\nmax_threads = \"many\"\n", 0, "awaken.toml:2: config_invalid: store.max_threads: expected an integer, got a string"},
		{"too large", "[store]\nmax_threads = 9999999999\n", 0, "awaken.toml:2: config_invalid: store.max_threads: 9999999999 is too large"},
		{"typo", "[store]\nmax_thread = 5\n", 0, `awaken.toml:2: config_invalid: unknown key "store.max_thread" (did you mean "max_threads"?)`},
		{"file store", "[store]\nkind = \"file\"\n\nmax_threads = 500\n", 0,
			"awaken.toml:4: config_invalid: store.max_threads: applies to the memory store only: the file store keeps every thread on disk, " +
				"so there is nothing to bound; remove max_threads, or set kind = \"memory\""},
		{"file store, kind after it", "[store]\nmax_threads = 500\nkind = \"file\"\n", 0,
			"awaken.toml:2: config_invalid: store.max_threads: applies to the memory store only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.toml), "awaken.toml")
			if tc.err != "" {
				if err == nil || errs.CodeOf(err) != errs.ConfigInvalid || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error = %v\nwant %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Store.MaxThreads != tc.want {
				t.Fatalf("MaxThreads = %d, want %d", c.Store.MaxThreads, tc.want)
			}
			// The effective config shows the bound of a memory store only.
			shown := strings.Contains(c.Render(), "\nmax_threads = "+strconv.Itoa(tc.want)+"\n")
			if shown != (c.Store.Kind == StoreMemory) {
				t.Fatalf("kind %s, max_threads shown: %v\n%s", c.Store.Kind, shown, c.Render())
			}
		})
	}
}

// TestDurationsAndSizesAreBounded: every duration and size awaken.toml
// accepts refuses NaN, infinities, negatives, zero and absurdly large
// values at load, as config_invalid at the value's line, and keeps the
// largest sensible values.
func TestDurationsAndSizesAreBounded(t *testing.T) {
	durations := []struct{ table, key string }{
		{"runtime", "hook_timeout"}, {"model", "timeout"}, {"tools", "shell_timeout"},
	}
	badDurations := []string{`"NaN"`, `nan`, `"inf"`, `inf`, `-inf`, `"-1s"`, `"-100ms"`, `"0s"`, `"0"`, `0`,
		`"1h1ns"`, `"2h"`, `"100000h"`, `"9999999999h"`, `1e300`, `100`}
	sizes := []struct{ table, key string }{{"server", "body_limit"}}
	badSizes := []string{`"NaN"`, `nan`, `inf`, `-1`, `"-1MiB"`, `0`, `"0"`, `"1GiB1"`, `"2GiB"`, `1073741825`,
		`9223372036854775807`, `1e300`, `"1.5MiB"`}
	type tc struct{ table, key, value string }
	var bad []tc
	for _, d := range durations {
		for _, v := range badDurations {
			bad = append(bad, tc{d.table, d.key, v})
		}
	}
	for _, s := range sizes {
		for _, v := range badSizes {
			bad = append(bad, tc{s.table, s.key, v})
		}
	}
	for _, c := range bad {
		src := "# a comment\n[" + c.table + "]\n" + c.key + " = " + c.value + "\n"
		_, err := Parse([]byte(src), "awaken.toml")
		var list errs.List
		list.Add(err)
		if len(list) != 1 || list[0].Code != errs.ConfigInvalid || list[0].Pos.String() != "awaken.toml:3" ||
			!strings.Contains(list[0].Msg, c.table+"."+c.key) {
			t.Errorf("%s.%s = %s: want one config_invalid at awaken.toml:3 naming the key, got %v", c.table, c.key, c.value, err)
		}
	}
	// The bounds themselves load.
	for _, d := range durations {
		for _, v := range []string{`"1h"`, `"60m"`, `"1ns"`} {
			src := "[" + d.table + "]\n" + d.key + " = " + v + "\n"
			if _, err := Parse([]byte(src), "awaken.toml"); err != nil {
				t.Errorf("%s.%s = %s: %v", d.table, d.key, v, err)
			}
		}
	}
	for _, s := range sizes {
		for _, v := range []string{`"1GiB"`, `1073741824`, `1`} {
			src := "[" + s.table + "]\n" + s.key + " = " + v + "\n"
			if _, err := Parse([]byte(src), "awaken.toml"); err != nil {
				t.Errorf("%s.%s = %s: %v", s.table, s.key, v, err)
			}
		}
	}
}

// TestStorePostgresOnlyKeys: publish and max_conns do something only for
// the PostgreSQL store; set for another kind they would be ignored, so the
// file is refused at their line instead.
func TestStorePostgresOnlyKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		toml string
		err  string // "" when it parses
	}{
		{"postgres", "[store]\nkind = \"postgres\"\nmax_conns = 8\npublish = true\n", ""},
		{"memory", "[store]\nkind = \"memory\"\n", ""},
		{"publish false anywhere", "[store]\nkind = \"file\"\npublish = false\n", ""},
		{"publish on memory", "[store]\npublish = true\n",
			"awaken.toml:2: config_invalid: store.publish: applies to the PostgreSQL store only: replicas share bundles through its database; " +
				"set kind = \"postgres\", or remove publish"},
		{"publish on file", "[store]\nkind = \"file\"\n\npublish = true\n", "awaken.toml:4: config_invalid: store.publish: applies to the PostgreSQL store only"},
		{"max_conns on memory", "[store]\nmax_conns = 8\n",
			"awaken.toml:2: config_invalid: store.max_conns: applies to the PostgreSQL store only: it bounds the connections to its database; " +
				"set kind = \"postgres\", or remove max_conns"},
		{"max_conns before kind", "[store]\nmax_conns = 8\nkind = \"file\"\n", "awaken.toml:2: config_invalid: store.max_conns: applies to the PostgreSQL store only"},
		{"postgres statement_timeout", "[store]\nkind = \"postgres\"\nstatement_timeout = \"30s\"\n", ""},
		{"statement_timeout on file", "[store]\nkind = \"file\"\nstatement_timeout = \"30s\"\n",
			"awaken.toml:3: config_invalid: store.statement_timeout: applies to the PostgreSQL store only: it bounds each statement its database runs; " +
				"set kind = \"postgres\", or remove statement_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.toml), "awaken.toml")
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := Parse([]byte(c.Render()), ""); err != nil {
					t.Fatalf("the effective config does not read back: %v\n%s", err, c.Render())
				}
				return
			}
			if err == nil || errs.CodeOf(err) != errs.ConfigInvalid || !strings.HasPrefix(err.Error(), tc.err) {
				t.Fatalf("error = %v\nwant %s", err, tc.err)
			}
		})
	}
	// A Config built in Go with max_conns on another store renders a file
	// that reads back.
	c := Default()
	c.Store.MaxConns = 8
	if _, err := Parse([]byte(c.Render()), ""); err != nil {
		t.Fatalf("%v\n%s", err, c.Render())
	}
}

// TestShadowConfigNeedsPluginDir: [shadow] config names the candidate's
// configuration; without plugin_dir there is no candidate and it would be
// ignored, so it is refused at its line.
func TestShadowConfigNeedsPluginDir(t *testing.T) {
	for _, tc := range []struct {
		name string
		toml string
		err  string // "" when it parses
	}{
		{"both", "[shadow]\nplugin_dir = \"candidate\"\nconfig = \"candidate.toml\"\n", ""},
		{"empty config alone", "[shadow]\nconfig = \"\"\n", ""},
		{"config alone", "[shadow]\n\nconfig = \"candidate.toml\"\n",
			"awaken.toml:3: config_invalid: shadow.config: names the candidate's configuration, but no candidate is set; " +
				"add plugin_dir = \"candidate\" (the candidate's plugin directory), or remove config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.toml), "awaken.toml")
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := Parse([]byte(c.Render()), ""); err != nil {
					t.Fatalf("the effective config does not read back: %v\n%s", err, c.Render())
				}
				return
			}
			if err == nil || errs.CodeOf(err) != errs.ConfigInvalid || !strings.HasPrefix(err.Error(), tc.err) {
				t.Fatalf("error = %v\nwant %s", err, tc.err)
			}
		})
	}
}
