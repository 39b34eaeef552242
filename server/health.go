package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/awaken-lua/awaken-lua/run"
)

// probeEvery bounds how often /readyz asks the store whether it can write.
const probeEvery = time.Second

// storeHealth is whether the store can write, for /readyz: a failed save
// makes it unhealthy at once; a successful save or probe makes it healthy
// again, so readiness recovers by itself. A store that implements
// run.Prober (the file store) is also asked at most every probeEvery, so
// /readyz notices a store that broke while nobody saved.
type storeHealth struct {
	down atomic.Bool // fast path for wrote

	mu      sync.Mutex
	err     error
	checked time.Time
}

// failed records a save the store could not do.
func (h *storeHealth) failed(err error) {
	h.mu.Lock()
	h.err, h.checked = err, time.Now()
	h.down.Store(true)
	h.mu.Unlock()
}

// wrote records a successful save.
func (h *storeHealth) wrote() {
	if !h.down.Load() {
		return
	}
	h.mu.Lock()
	h.err = nil
	h.down.Store(false)
	h.mu.Unlock()
}

// check returns why the store cannot write, or nil, probing it when the
// last answer is older than probeEvery.
func (h *storeHealth) check(ctx context.Context, st run.Store) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := st.(run.Prober); ok && time.Since(h.checked) >= probeEvery {
		h.checked = time.Now()
		h.err = p.Probe(ctx)
		h.down.Store(h.err != nil)
	}
	return h.err
}
