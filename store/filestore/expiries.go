package filestore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/run"
)

var _ run.ExpiryLister = (*Store)(nil)

// WaitingExpiries implements run.ExpiryLister: it reads every run in the
// store, so a sidecar calls it once, at start. A run that cannot be read
// is left out (and set aside when corrupt, as a read does), so one bad
// file does not keep the others' approvals from expiring.
func (s *Store) WaitingExpiries(ctx context.Context) (map[string]time.Time, error) {
	entries, err := s.fs.ReadDir(filepath.Join(s.dir, runsDir))
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	due := map[string]time.Time{}
	for _, e := range entries {
		stem, isBase := strings.CutSuffix(e.Name(), ext)
		if !isBase || e.IsDir() || strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		id, ok := idOf(stem)
		if !ok {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cp, found, err := s.Run(ctx, id)
		if err != nil || !found {
			if err != nil {
				s.log.Warn("cannot read a run to see whether its approval expires", "run_id", id, "err", err)
			}
			continue
		}
		if cp.Status != run.Waiting {
			continue
		}
		if at := cp.NextExpiry(); !at.IsZero() {
			due[id] = at
		}
	}
	return due, nil
}
