package luabridge

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's Lua API reference and the LuaLS stubs cannot drift: every
// function and field one lists, the other lists too.
func TestReadmeReferenceMatchesStubs(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(readme)
	start := strings.Index(doc, "<!-- api-reference")
	end := strings.Index(doc, "## Standard plugins")
	if start < 0 || end < start {
		t.Fatal("the README has no API reference section")
	}
	ref := doc[start:end]
	stubB, _ := os.ReadFile("../stdlib/types/awaken.lua")
	testB, _ := os.ReadFile("../stdlib/types/testing.lua")
	stub, tstub := string(stubB), string(testB)
	found := func(re string) []string {
		seen := map[string]bool{}
		var out []string
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(ref, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				out = append(out, m[1])
			}
		}
		return out
	}
	compare(t, "awaken functions", found("`awaken\\.(\\w+)\\("), stubNames(stub, `(?m)^function awaken\.(\w+)\(`))
	compare(t, "awaken.json", found("`awaken\\.json\\.(\\w+)\\("), stubNames(stub, `(?m)^function json\.(\w+)\(`))
	compare(t, "awaken.log", found("`awaken\\.log\\.(\\w+)\\("), stubNames(stub, `(?m)^function log\.(\w+)\(`))
	compare(t, "awaken.regex", found("`awaken\\.regex\\.(\\w+)\\("), stubNames(stub, `(?m)^function regex\.(\w+)\(`))
	compare(t, "awaken.shell", found("`awaken\\.shell\\.(\\w+)\\("), stubNames(stub, `(?m)^function shell\.(\w+)\(`))
	compare(t, "awaken.rules", found("`awaken\\.rules\\.(\\w+)\\("), stubNames(stub, `(?m)^function rules\.(\w+)\(`))
	compare(t, "policy methods", found("`policy:(\\w+)\\("), stubNames(stub, `(?m)^function Policy:(\w+)\(`))
	compare(t, "rule methods", found("`rule:(\\w+)\\("), stubNames(stub, `(?m)^function Rule:(\w+)\(`))
	var fields []string
	if m := regexp.MustCompile("`awaken\\.plugin\\(spec\\)` \\|[^|\n]*`\\{([^}`]*)\\}`").FindStringSubmatch(ref); m != nil {
		for _, f := range strings.Split(m[1], ",") {
			fields = append(fields, strings.TrimSuffix(strings.TrimSpace(f), "?"))
		}
	}
	compare(t, "awaken.plugin fields", fields, classFields(stub, "awaken.PluginSpec"))
	compare(t, "plugin methods", found("`p:(\\w+)\\("), stubNames(stub, `(?m)^function Plugin:(\w+)\(`))
	compare(t, "ctx methods", found("`ctx:(\\w+)\\("), stubNames(stub, `(?m)^function Context:(\w+)\(`))
	compare(t, "ctx fields", found("`ctx\\.(\\w+)`"), classFields(stub, "awaken.Context"))
	compare(t, "awaken.testing", found("`t\\.(\\w+)\\("), stubNames(tstub, `(?m)^function testing\.(\w+)\(`))
	compare(t, "harness methods", found("`h:(\\w+)\\("), stubNames(tstub, `(?m)^function Harness:(\w+)\(`))
}
