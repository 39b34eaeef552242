package command

import "testing"

func TestCommand(t *testing.T) {
	c := Command{Plugin: "a"}
	if !c.Empty() || c.Bumps() {
		t.Fatal("zero command")
	}
	c.Update("k", 3)
	c.Emit("e", nil)
	c.StopRun("one", "")
	c.StopRun("two", "")
	if c.Updates[0].Value != 3.0 || c.Updates[0].Plugin != "a" || c.Stop.Code != "one" || !c.Bumps() {
		t.Fatalf("%+v", c)
	}
	c.Update("bad", make(chan int))
	if c.Err() == nil {
		t.Fatal("a non-value was accepted")
	}
	o := Command{Plugin: "b"}
	o.Schedule("x", map[string]any{"n": 1})
	o.StopRun("three", "")
	c.Merge(&o)
	if len(c.Actions) != 1 || c.Stop.Code != "one" || c.Actions[0].Payload.(map[string]any)["n"] != 1.0 {
		t.Fatalf("merge %+v", c)
	}
	c.Reset()
	if !c.Empty() || c.Err() != nil {
		t.Fatal("reset")
	}
	only := Command{}
	only.Emit("e", 1)
	if only.Empty() || only.Bumps() {
		t.Fatal("effects alone do not bump the revision")
	}
}
