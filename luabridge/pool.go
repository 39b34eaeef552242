package luabridge

import (
	"context"
	"errors"
	"sync"
)

// pool holds warm instances of one plugin for one generation. It is bounded
// and keeps what it holds until it is closed (unlike sync.Pool, which drops
// everything at each garbage collection, and a fresh state costs ~60us).
type pool struct {
	mk   func() (*instance, error)
	free chan *instance
	mu   sync.Mutex
	live int // instances in existence (free or in use)
	max  int
	// closed pools close instances as they come back; done is closed with
	// them, so a caller waiting for a free instance fails instead of
	// waiting forever.
	closed bool
	done   chan struct{}
	// freed is closed, and replaced, when a discarded instance frees its
	// place: a caller waiting for a free instance makes one instead (no
	// instance may ever come back, if every one in use is discarded).
	freed chan struct{}
}

// errPoolClosed is what a call on a closed generation gets.
var errPoolClosed = errors.New("the plugin generation was closed while the call waited for a Lua state")

func newPool(max int, mk func() (*instance, error)) *pool {
	if max < 1 {
		max = 1
	}
	return &pool{mk: mk, free: make(chan *instance, max), max: max, done: make(chan struct{}), freed: make(chan struct{})}
}

// add puts an existing instance (the one that registered the plugin) in.
func (p *pool) add(inst *instance) {
	p.mu.Lock()
	p.live++
	p.mu.Unlock()
	p.put(inst, false)
}

// get returns a free instance, makes one while under the bound, or waits
// until one comes back or a place is freed.
func (p *pool) get(ctx context.Context) (*instance, error) {
	for {
		select {
		case inst := <-p.free:
			return inst, nil
		default:
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errPoolClosed
		}
		if p.live < p.max {
			p.live++
			p.mu.Unlock()
			inst, err := p.mk()
			if err != nil {
				p.mu.Lock()
				p.release()
				p.mu.Unlock()
				return nil, err
			}
			return inst, nil
		}
		freed := p.freed
		p.mu.Unlock()
		select {
		case inst := <-p.free:
			return inst, nil
		case <-freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.done:
			return nil, errPoolClosed
		}
	}
}

// release gives up the place of an instance that is gone, waking the
// callers waiting for one. p.mu is held.
func (p *pool) release() {
	p.live--
	close(p.freed)
	p.freed = make(chan struct{})
}

// put returns an instance; a discarded one (its deadline fired, or its
// pool is closed) is closed instead.
func (p *pool) put(inst *instance, discard bool) {
	p.mu.Lock()
	if discard || p.closed {
		p.release()
		p.mu.Unlock()
		inst.close()
		return
	}
	p.mu.Unlock()
	select {
	case p.free <- inst:
	default: // cannot happen: live <= max = cap(free)
		p.mu.Lock()
		p.release()
		p.mu.Unlock()
		inst.close()
	}
}

// close closes the free instances now and the others when they return.
func (p *pool) close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.done)
	}
	p.mu.Unlock()
	for {
		select {
		case inst := <-p.free:
			p.mu.Lock()
			p.live--
			p.mu.Unlock()
			inst.close()
		default:
			return
		}
	}
}

// stats reports live and free instances.
func (p *pool) stats() (live, free int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live, len(p.free)
}
