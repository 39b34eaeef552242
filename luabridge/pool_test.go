package luabridge

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// A caller waiting for an instance is not left waiting when the one in
// use is discarded (its hook ran past the budget): the discard frees a
// place, and the caller makes a new instance. Before, it waited for an
// instance to come back, which none did, until its context ended; a run
// next to looping hooks on a one-core machine failed that way.
func TestPoolDiscardWakesAWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		made := 0
		p := newPool(1, func() (*instance, error) {
			made++
			return &instance{L: lua.NewState(lua.Options{SkipOpenLibs: true})}, nil
		})
		defer p.close()
		inUse, err := p.get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		type got struct {
			inst *instance
			err  error
		}
		done := make(chan got, 1)
		go func() {
			inst, err := p.get(ctx)
			done <- got{inst, err}
		}()
		synctest.Wait() // the caller waits: the one instance is in use
		p.put(inUse, true)
		g := <-done
		if g.err != nil {
			t.Fatalf("the waiting caller got %v, want a new instance", g.err)
		}
		if g.inst == inUse || made != 2 {
			t.Fatalf("the waiting caller got the discarded instance (%d made)", made)
		}
		p.put(g.inst, false)
	})
}
