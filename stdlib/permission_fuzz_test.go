package stdlib_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/stdlib"
)

// permissionRules is the permission.rules module, opened once per fuzz
// worker (each worker is its own process; calls within one are serial).
var permissionRules struct {
	sync.Mutex
	mod *luabridge.Module
	err error
}

func openPermissionRules() (*luabridge.Module, error) {
	if permissionRules.mod == nil && permissionRules.err == nil {
		permissionRules.mod, permissionRules.err = luabridge.OpenModule(luabridge.Source{FS: stdlib.FS, Name: "stdlib"}, "permission.rules", luabridge.Limits{})
	}
	return permissionRules.mod, permissionRules.err
}

// fuzzArgs are the arguments of the fixed calls the parsed rules are
// matched against: nested values for paths, and a long string so regexes
// work against their step budget.
var fuzzArgs = map[string]any{
	"command":   "npm test",
	"file_path": "src/a/b.go",
	"items":     []any{"first", "second"},
	"a":         map[string]any{"b": []any{map[string]any{"c": "x"}, map[string]any{"c": "y"}}},
	"n":         float64(3),
	"ok":        true,
	"long":      strings.Repeat("ab", 4000),
}

// FuzzPermissionRule parses arbitrary rule strings and matches what parses
// against fixed calls: parse returns a rule or nil and a message, matches
// returns a boolean or nil and a message, neither raises, and neither runs
// past the hook budget (a hostile rule must stay bounded).
func FuzzPermissionRule(f *testing.F) {
	for _, s := range []string{
		"Bash",
		"mcp__github__*",
		"/mcp__(gh|gl)__.*/",
		"Bash(npm *)",
		`Bash("npm *")`,
		"Bash(cd ~/src)",
		`Edit(file_path ~ "src/**")`,
		`Edit(file_path ~ "src/**)`,
		"Edit(file_path = src/a/b.go, n = 3, ok = true)",
		`Edit(file_path =~ "src/.*\.go")`,
		`Edit(file_path !=~ /.*\.rs/)`,
		"Edit(file_path !~ lib/**)",
		"Edit(command != ls)",
		"Edit(a.b[*].c = y)",
		"Edit(items[0] = first)",
		"Edit(items[*] ~ sec*)",
		`Edit(long =~ "(a|b)*")`,
		`Edit(long =~ "(a*)*(b*)*(a|b|ab)*c")`,
		`Edit(long =~ "` + strings.Repeat("(a|b|c|d)?", 45) + `x")`,
		`Edit(long =~ "` + strings.Repeat("(a|b|c|d)?", 12) + `[xy]")`,
		"/" + strings.Repeat("(", 20) + "a" + strings.Repeat(")", 20) + "/",
		"/((a{100}){100}){100}/",
		"Edit(a =~ x{100}, b =~ x{100}, c =~ x{100}, d =~ x{100}, e =~ x{100}, f =~ x{100}, g =~ x{100}, h =~ x{100}, i =~ x{100}, j =~ x{100}, k =~ x{100}, l =~ x{100}, m =~ x{100}, n =~ x{100}, o =~ x{100}, p =~ x{100}, q =~ x{100}, r =~ x{100}, s =~ x{100}, t =~ x{100}, u =~ x{100})",
		`/[^\d\s]{2,5}|\w+?/`,
		`Say(text = "a \"quoted\" word\\")`,
		"Edit(a == 1)",
		"Edit(a =)",
		"",
		"()",
		"/",
		"Bash(",
		// found by the fuzzer: Go's regexp refuses a glob with invalid UTF-8
		"0(\x80)",
		"T*\xc3(x ~ \xe2\x82, y !~ \xed\xa0\x80)",
		"T(x ~ é*, y ~ \U0001F600)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rule string) {
		permissionRules.Lock()
		defer permissionRules.Unlock()
		out, err := callRules(t, "parse", rule)
		if err != nil {
			t.Fatalf("parse(%q) failed: %v", rule, err)
		}
		if len(out) == 0 || out[0] == nil {
			if len(out) < 2 {
				t.Fatalf("parse(%q) returned nil without a message", rule)
			}
			if _, ok := out[1].(string); !ok {
				t.Fatalf("parse(%q) returned nil and a %T, not a message", rule, out[1])
			}
			return
		}
		parsed, ok := out[0].(map[string]any)
		if !ok {
			t.Fatalf("parse(%q) returned a %T, not a rule", rule, out[0])
		}
		// The fixed call, and the same arguments under the rule's own name
		// so its argument conditions are evaluated too.
		names := []string{"Bash"}
		if n, ok := parsed["name"].(string); ok {
			names = append(names, n)
		}
		for _, name := range names {
			res, err := callRules(t, "matches", parsed, name, fuzzArgs)
			if err != nil {
				t.Fatalf("matches(parse(%q), %q) failed: %v", rule, name, err)
			}
			if len(res) == 0 {
				t.Fatalf("matches(parse(%q), %q) returned nothing", rule, name)
			}
			switch res[0].(type) {
			case bool:
			case nil:
				if len(res) < 2 {
					t.Fatalf("matches(parse(%q), %q) returned nil without a message", rule, name)
				}
				if _, ok := res[1].(string); !ok {
					t.Fatalf("matches(parse(%q), %q) returned nil and a %T, not a message", rule, name, res[1])
				}
			default:
				t.Fatalf("matches(parse(%q), %q) returned a %T, not a boolean", rule, name, res[0])
			}
		}
	})
}

// callRules calls a function of the module. The hook budget is wall-clock
// time, so a busy machine (the fuzzer's own workers, -race) can stop a call
// that is not slow: a call that times out is retried on a fresh module, and
// only one that times out three times running is a failure.
func callRules(t *testing.T, fn string, args ...any) ([]any, error) {
	var err error
	for range 3 {
		mod, openErr := openPermissionRules()
		if openErr != nil {
			t.Fatalf("open permission.rules: %v", openErr)
		}
		var out []any
		out, err = mod.Call(fn, args...)
		if err == nil || !strings.HasPrefix(err.Error(), "hook_timeout") {
			return out, err
		}
		mod.Close()
		permissionRules.mod, permissionRules.err = nil, nil // a timeout closes the module
	}
	return nil, err
}
