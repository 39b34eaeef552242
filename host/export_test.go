package host

import (
	"context"
	"fmt"
)

// ForceReload builds and swaps a generation even if nothing changed.
func ForceReload(h *Host, i int) error {
	h.opts.Model = ""
	h.reloading <- struct{}{}
	cur := h.current.Load()
	<-h.reloading
	cur.Hash = fmt.Sprintf("forced-%d", i)
	st := h.Reload(context.Background())
	if st.LastResult != "loaded" {
		return fmt.Errorf("reload: %+v", st)
	}
	return nil
}
