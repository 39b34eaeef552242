package config

import (
	"os"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// FuzzConfig checks, for any input, that Parse does not panic, that every
// error renders, and that a config that parses renders to text that parses
// to an equal config. PluginConfigs runs too, since it walks whatever
// values the file held.
func FuzzConfig(f *testing.F) {
	for _, file := range fixtures(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("[agents.\"a b\".plugins.\"\"]\n\"x.y\" = \"\\u0001\\\"\\\"\\\"\"\n"))
	f.Add([]byte("[plugins.p]\na = [[], {}, [{ b = 1e-300 }], -0.0]\n[[plugins.p.c]]\n[[plugins.p.c]]\nd.e = 1"))
	f.Add([]byte("[agents.x]\nsystem_prompt = '''\n\"a\"\"\n\\ '''\ntemperature = 2"))
	set := testSet(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "awaken.toml")
		if err != nil {
			var list errs.List
			list.Add(err)
			for _, e := range list {
				_ = e.Error()
				_ = e.Pos.String()
			}
			_ = err.Error()
			return
		}
		text := c.Render()
		back, err := Parse([]byte(text), "awaken.toml")
		if err != nil {
			t.Fatalf("the rendered config does not parse: %v\n%s", err, text)
		}
		if !same(c, back) {
			t.Fatalf("round trip changed the config:\ninput:\n%s\nrendered:\n%s", data, text)
		}
		for _, id := range c.AgentIDs() {
			if _, err := c.PluginConfigs(set, id); err != nil {
				_ = err.Error()
			}
		}
		_ = c.Enabled()
	})
}
