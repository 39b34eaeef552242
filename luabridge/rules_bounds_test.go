package luabridge

import (
	"context"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// awaken.shell.split, awaken.rules.compile and policy:decide look at the
// call's deadline as they go: with it fired, each raises the deadline's
// error instead of finishing.
func TestRulesPollTheDeadline(t *testing.T) {
	m, _ := openTestModule(t)
	L := m.inst.L
	rules := L.CreateTable(4096, 0)
	for i := range 4096 {
		rules.Append(lua.LString("Bash(tool" + strings.Repeat("x", i%50) + " *)"))
	}
	spec := L.CreateTable(0, 1)
	spec.RawSetString("deny", rules)
	compile := lib(t, m, "awaken.rules.compile")
	if err := callWithin(t, L, compile, 1, spec); err != nil {
		t.Fatal(err)
	}
	policy := L.Get(-1)
	L.SetTop(0)
	decide := L.GetField(policy, "decide")
	many := lua.LString(strings.Repeat("ls; ", 4000) + "ls")
	tests := []struct {
		name string
		fn   lua.LValue
		args []lua.LValue
	}{
		{"awaken.shell.split", lib(t, m, "awaken.shell.split"), []lua.LValue{many}},
		{"awaken.rules.compile", compile, []lua.LValue{spec}},
		{"policy:decide", decide, []lua.LValue{policy, lua.LString("Bash"), tableOf(L, "command", many)}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			L.SetContext(ctx)
			defer L.SetContext(m.inst.dl)
			err := callWithin(t, L, tc.fn, lua.MultRet, tc.args...)
			if err == nil {
				t.Fatalf("%s ran to its end with the deadline fired", tc.name)
			}
			if !strings.Contains(err.Error(), context.Canceled.Error()) {
				t.Fatalf("err = %v", err)
			}
			L.SetTop(0)
		})
	}
}

func tableOf(L *lua.LState, k string, v lua.LValue) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString(k, v)
	return t
}
