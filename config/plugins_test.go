package config

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/schema"
)

// permissionSchema is shaped like the stdlib permission plugin's config.
var permissionSchema = schema.MustCompile(map[string]any{
	"type": "object", "additionalProperties": false,
	"properties": map[string]any{
		"default": map[string]any{"type": "string", "enum": []any{"ask", "allow", "deny"}, "default": "ask"},
		"rules": map[string]any{"type": "array", "default": []any{}, "items": map[string]any{
			"type": "object", "required": []any{"tool"},
			"properties": map[string]any{
				"tool":   map[string]any{"type": "string"},
				"action": map[string]any{"type": "string", "default": "ask"},
			},
		}},
	},
})

// noStars is a ValidateConfig: a check the schema cannot express.
func noStars(cfg any) error {
	var list errs.List
	for i, r := range cfg.(map[string]any)["rules"].([]any) {
		if r.(map[string]any)["tool"] == "*" {
			list.Add(&errs.Error{Code: errs.ConfigInvalid, Plugin: "permission",
				Msg: "rule " + strconv.Itoa(i+1) + `: tool "*" matches every tool; set default instead`})
		}
	}
	return list.Err()
}

func testSet(t testing.TB, extra ...plugin.Plugin) *plugin.Set {
	t.Helper()
	plugins := append([]plugin.Plugin{
		plugin.New("permission", func(r *plugin.Registrar) error {
			r.Config(permissionSchema, noStars)
			return nil
		}),
		plugin.New("budget", func(r *plugin.Registrar) error {
			r.Config(schema.MustCompile(map[string]any{"type": "object", "properties": map[string]any{
				"max_calls": map[string]any{"type": "integer", "minimum": 1, "default": 10},
			}}), nil)
			return nil
		}),
		plugin.New("plain", func(r *plugin.Registrar) error { return nil }),
	}, extra...)
	set, err := plugin.NewSet(plugins...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestPluginConfigs(t *testing.T) {
	defaults := map[string]any{"default": "ask", "rules": []any{}}
	tests := []struct {
		name    string
		src     string
		agent   string
		extra   []plugin.Plugin
		want    map[string]any
		wantErr string
	}{
		{
			name: "defaults filled without any table",
			want: map[string]any{"permission": defaults, "budget": map[string]any{"max_calls": 10.0}},
		},
		{
			name: "plugin-wide table",
			src:  "[plugins.permission]\nrules = [{ tool = \"shell\" }]\n[plugins.budget]\nmax_calls = 3\n",
			want: map[string]any{
				"permission": map[string]any{"default": "ask", "rules": []any{map[string]any{"tool": "shell", "action": "ask"}}},
				"budget":     map[string]any{"max_calls": 3.0},
			},
		},
		{
			name:  "an agent's table replaces the plugin-wide one",
			src:   "[plugins.permission]\ndefault = \"allow\"\n[agents.ops.plugins.permission]\nrules = [{ tool = \"x\", action = \"deny\" }]\n",
			agent: "ops",
			want: map[string]any{
				"permission": map[string]any{"default": "ask", "rules": []any{map[string]any{"tool": "x", "action": "deny"}}},
				"budget":     map[string]any{"max_calls": 10.0},
			},
		},
		{
			name:  "an agent with true uses the plugin-wide table",
			src:   "[plugins.permission]\ndefault = \"allow\"\n[agents.ops.plugins]\npermission = true\n",
			agent: "ops",
			want: map[string]any{
				"permission": map[string]any{"default": "allow", "rules": []any{}},
				"budget":     map[string]any{"max_calls": 10.0},
			},
		},
		{
			name: "an empty table for a plugin without config",
			src:  "[agents.default.plugins.plain]\n",
			want: map[string]any{"permission": defaults, "budget": map[string]any{"max_calls": 10.0}},
		},
		{
			name: "schema error in an inline array, with its line",
			src: `[plugins.permission]
default = "ask"
rules = [
  { tool = "a" },
  { tool = "b" },
  { tool = 3 },
]
`,
			wantErr: `awaken.toml:6: config_invalid: plugins.permission.rules[2].tool: expected string, got number`,
		},
		{
			name:  "schema errors in an agent's array of tables and another plugin",
			agent: "ops",
			src: `[agents.ops.plugins.permission]
[[agents.ops.plugins.permission.rules]]
tool = "a"
[[agents.ops.plugins.permission.rules]]
action = "deny"
[[agents.ops.plugins.permission.rules]]
tool = 1

[plugins.budget]
max_calls = 0
`,
			wantErr: `awaken.toml:4: config_invalid: agents.ops.plugins.permission.rules[1]: missing required property "tool"
awaken.toml:10: config_invalid: plugins.budget.max_calls: 0 is below minimum 1`,
		},
		{
			name:    "the same key in two rules finds the right one",
			src:     "[plugins.permission]\n[[plugins.permission.rules]]\ntool = \"a\"\naction = \"ask\"\n[[plugins.permission.rules]]\ntool = \"b\"\naction = 7\n",
			wantErr: `awaken.toml:7: config_invalid: plugins.permission.rules[1].action: expected string, got number`,
		},
		{
			name:    "unknown property",
			src:     "[plugins.permission]\ndefualt = \"deny\"\n",
			wantErr: `awaken.toml:1: config_invalid: plugins.permission: unknown property "defualt" (additionalProperties is false; did you mean "default"?)`,
		},
		{
			name:    "enum",
			src:     "[plugins.permission]\ndefault = \"never\"\n",
			wantErr: `awaken.toml:2: config_invalid: plugins.permission.default: "never" is not one of "ask", "allow", "deny"`,
		},
		{
			name: "unknown plugin ids",
			src: `[agents.a]
plugins = ["permision"]
[agents.b.plugins.budgt]
[plugins.xyzzy]
`,
			agent: "a",
			wantErr: `awaken.toml:2: config_invalid: agents.a.plugins: no plugin "permision" is loaded (did you mean "permission"?); loaded plugins: budget, permission, plain
awaken.toml:4: config_invalid: plugins.xyzzy: no plugin "xyzzy" is loaded; loaded plugins: budget, permission, plain`,
		},
		{
			name:    "unknown plugin in an agent's table",
			src:     "[agents.b.plugins.budgt]\n",
			agent:   "b",
			wantErr: `awaken.toml:1: config_invalid: agents.b.plugins.budgt: no plugin "budgt" is loaded (did you mean "budget"?); loaded plugins: budget, permission, plain`,
		},
		{
			name:    "ValidateConfig",
			src:     "[plugins.permission]\nrules = [{ tool = \"fs_read\" }, { tool = \"*\" }]\n",
			wantErr: `awaken.toml:1: config_invalid: plugins.permission: rule 2: tool "*" matches every tool; set default instead`,
		},
		{
			name:    "a table for a plugin without config",
			src:     "[plugins.plain]\nx = 1\n",
			wantErr: `awaken.toml:1: config_invalid: plugins.plain: plugin "plain" declares no config, so this table would be ignored; remove it (or declare config in the plugin)`,
		},
		{
			name: "a required property without any table",
			extra: []plugin.Plugin{plugin.New("needs", func(r *plugin.Registrar) error {
				r.Config(schema.MustCompile(map[string]any{"type": "object", "required": []any{"endpoint"}}), nil)
				return nil
			})},
			wantErr: `awaken.toml: config_invalid: plugins.needs: missing required property "endpoint"; add a [plugins.needs] table to set it`,
		},
		{
			name: "a validator that fails in its own file keeps its code and place",
			src:  "[plugins.lua]\n",
			extra: []plugin.Plugin{plugin.New("lua", func(r *plugin.Registrar) error {
				r.Config(schema.MustCompile(map[string]any{"type": "object"}), func(any) error {
					return &errs.Error{Code: errs.HookFailed, Pos: errs.Pos{File: "scripts/lua.lua", Line: 7}, Plugin: "lua", Phase: "load", Msg: "attempt to index a nil value"}
				})
				return nil
			})},
			wantErr: `scripts/lua.lua:7: hook_failed: lua/load: plugins.lua: attempt to index a nil value`,
		},
		{
			name: "a validator that panics",
			extra: []plugin.Plugin{plugin.New("boom", func(r *plugin.Registrar) error {
				r.Config(schema.MustCompile(map[string]any{"type": "object"}), func(any) error { panic("oops") })
				return nil
			})},
			wantErr: `awaken.toml: config_invalid: plugins.boom: the config validator of plugin "boom" panicked: oops`,
		},
		{
			name:    "unknown agent",
			src:     "[agents.ops]\n[agents.dev]\n",
			agent:   "opps",
			wantErr: `awaken.toml: config_invalid: there is no agent "opps" (did you mean "ops"?); the agents are dev, ops`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(tc.src), "awaken.toml")
			if err != nil {
				t.Fatal(err)
			}
			agent := tc.agent
			if agent == "" {
				agent = DefaultAgent
			}
			got, err := c.PluginConfigs(testSet(t, tc.extra...), agent)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// TestPluginConfigsCopies checks that a caller changing a result cannot
// change the Config.
func TestPluginConfigsCopies(t *testing.T) {
	c, err := Parse([]byte("[plugins.permission]\nrules = [{ tool = \"a\", action = \"ask\" }]\n"), "awaken.toml")
	if err != nil {
		t.Fatal(err)
	}
	set := testSet(t)
	got, err := c.PluginConfigs(set, DefaultAgent)
	if err != nil {
		t.Fatal(err)
	}
	got["permission"].(map[string]any)["rules"].([]any)[0].(map[string]any)["tool"] = "changed"
	again, _ := c.PluginConfigs(set, DefaultAgent)
	if again["permission"].(map[string]any)["rules"].([]any)[0].(map[string]any)["tool"] != "a" {
		t.Fatal("PluginConfigs shares values with the Config")
	}
}

func TestCheckPlugins(t *testing.T) {
	src := `[agents.a]
[agents.b]
[agents.c.plugins.permission]
default = "nope"

[plugins.permission]
default = 1
`
	c, err := Parse([]byte(src), "awaken.toml")
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckPlugins(testSet(t))
	want := `awaken.toml:4: config_invalid: agents.c.plugins.permission.default: "nope" is not one of "ask", "allow", "deny"
awaken.toml:7: config_invalid: plugins.permission.default: expected string, got number`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if err := Default().CheckPlugins(testSet(t)); err != nil {
		t.Fatal(err)
	}
}

func TestSplitPath(t *testing.T) {
	tests := []struct {
		msg, suffix, rest string
		n                 int
		ok                bool
	}{
		{msg: "$: expected object, got array", suffix: "", rest: "expected object, got array", ok: true},
		{msg: "$.rules[2].tool: expected string, got number", suffix: ".rules[2].tool", rest: "expected string, got number", n: 3, ok: true},
		{msg: `$["a: b"].c: bad`, suffix: `["a: b"].c`, rest: "bad", n: 2, ok: true},
		{msg: "no path", ok: false},
		{msg: "$.: x", ok: false},
		{msg: "$[x]: x", ok: false},
		{msg: "$.a", ok: false},
	}
	for _, tc := range tests {
		suffix, segs, rest, ok := splitPath(tc.msg)
		if ok != tc.ok || suffix != tc.suffix || rest != tc.rest || len(segs) != tc.n {
			t.Errorf("splitPath(%q) = %q, %v, %q, %v", tc.msg, suffix, segs, rest, ok)
		}
	}
	if _, segs, _, _ := splitPath(`$["a: b"][3]: x`); !reflect.DeepEqual(segs, []seg{{name: "a: b", index: -1}, {index: 3}}) {
		t.Errorf("segs = %v", segs)
	}
}
