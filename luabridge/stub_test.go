package luabridge

import (
	"context"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	lua "github.com/yuin/gopher-lua"
)

// The LuaLS stub (stdlib/types/awaken.lua) and the bound API cannot drift:
// every function and field Lua sees is in the stub, and the stub declares
// nothing that does not exist.
func TestStubMatchesAPI(t *testing.T) {
	stub, err := os.ReadFile("../stdlib/types/awaken.lua")
	if err != nil {
		t.Fatal(err)
	}
	src := string(stub)
	l := &Loader{Plugins: Source{Name: "scripts", FS: fstest.MapFS{"x.lua": {Data: []byte(
		`local awaken = require("awaken") local p = awaken.plugin{} return p`)}}}}
	g, err := l.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	inst, err := g.plugins[0].pool.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer g.plugins[0].pool.put(inst, false)

	keys := func(t *lua.LTable) []string {
		var out []string
		t.ForEach(func(k, _ lua.LValue) { out = append(out, k.String()) })
		sort.Strings(out)
		return out
	}
	real := func(proxy *lua.LTable) *lua.LTable {
		return proxy.Metatable.(*lua.LTable).RawGetString("__index").(*lua.LTable)
	}
	module := real(inst.awaken)
	for _, lib := range []string{"json", "log", "regex", "shell", "rules"} {
		inst.L.GetField(inst.awaken, lib) // libraries are made on first use
	}
	var fns, fields []string
	for _, k := range keys(module) {
		if _, isFn := module.RawGetString(k).(*lua.LFunction); isFn {
			fns = append(fns, k)
		} else {
			fields = append(fields, k)
		}
	}
	compare(t, "awaken functions", fns, stubNames(src, `(?m)^function awaken\.(\w+)\(`))
	compare(t, "awaken fields", fields, classFields(src, "awaken"))
	compare(t, "awaken.json", keys(real(module.RawGetString("json").(*lua.LTable))), stubNames(src, `(?m)^function json\.(\w+)\(`))
	compare(t, "awaken.log", keys(real(module.RawGetString("log").(*lua.LTable))), stubNames(src, `(?m)^function log\.(\w+)\(`))
	compare(t, "awaken.regex", keys(real(module.RawGetString("regex").(*lua.LTable))), stubNames(src, `(?m)^function regex\.(\w+)\(`))
	compare(t, "awaken.shell", keys(real(module.RawGetString("shell").(*lua.LTable))), stubNames(src, `(?m)^function shell\.(\w+)\(`))
	compare(t, "awaken.rules", keys(real(module.RawGetString("rules").(*lua.LTable))), stubNames(src, `(?m)^function rules\.(\w+)\(`))
	compare(t, "policy methods", keys(rulesMeta(inst.L, rulesPolicyMetaKey).RawGetString("__index").(*lua.LTable)), stubNames(src, `(?m)^function Policy:(\w+)\(`))
	compare(t, "rule methods", keys(rulesMeta(inst.L, rulesRuleMetaKey).RawGetString("__index").(*lua.LTable)), stubNames(src, `(?m)^function Rule:(\w+)\(`))

	var methods []string
	for k := range inst.methods {
		methods = append(methods, k)
	}
	sort.Strings(methods)
	compare(t, "ctx methods", methods, stubNames(src, `(?m)^function Context:(\w+)\(`))
	compare(t, "ctx fields", append([]string(nil), ctxFields[:]...), classFields(src, "awaken.Context"))

	// ctx.run of a run with every field set.
	c := inst.newCall(&plugin.Input{Run: plugin.RunInfo{ID: "r", ThreadID: "t", AgentID: "a", Step: 1,
		Termination: "natural", Cwd: "/w"}}, nil, "test")
	inst.call = c
	runTable := inst.L.GetField(c.ud, "run").(*lua.LTable)
	inst.call = nil
	compare(t, "ctx.run fields", keys(runTable), classFields(src, "awaken.Run"))

	var pm []string
	for k := range (&instance{}).pluginFuncs() {
		pm = append(pm, k)
	}
	compare(t, "plugin methods", pm, stubNames(src, `(?m)^function Plugin:(\w+)\(`))
	var specFields []string
	for k := range pluginFields {
		specFields = append(specFields, k)
	}
	compare(t, "awaken.plugin fields", specFields, classFields(src, "awaken.PluginSpec"))
	var kf []string
	for k := range keyFields {
		kf = append(kf, k)
	}
	compare(t, "p:key fields", kf, classFields(src, "awaken.KeySpec"))
	compare(t, "ticket fields", gate.TicketFields(), classFields(src, "awaken.Ticket"))
}

func stubNames(src, re string) []string {
	var out []string
	for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(src, -1) {
		out = append(out, m[1])
	}
	return out
}

// classFields lists the ---@field names of one ---@class block.
func classFields(src, class string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(line, "---@class ") {
			in = strings.Fields(line)[1] == class
			continue
		}
		if !strings.HasPrefix(line, "---") {
			in = false
			continue
		}
		if in && strings.HasPrefix(line, "---@field ") {
			out = append(out, strings.TrimSuffix(strings.Fields(line)[1], "?"))
		}
	}
	return out
}

func compare(t *testing.T, what string, bound, stub []string) {
	t.Helper()
	sort.Strings(bound)
	sort.Strings(stub)
	if strings.Join(bound, ",") != strings.Join(stub, ",") {
		t.Errorf("%s: bound %v, stub %v", what, bound, stub)
	}
}

func TestTestingStubMatchesModule(t *testing.T) {
	stub, err := os.ReadFile("../stdlib/types/testing.lua")
	if err != nil {
		t.Fatal(err)
	}
	src := string(stub)
	compare(t, "awaken.testing", testingFuncs(), stubNames(src, `(?m)^function testing\.(\w+)\(`))
	compare(t, "harness methods", harnessMethods(), stubNames(src, `(?m)^function Harness:(\w+)\(`))
}
