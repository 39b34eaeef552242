package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// bundleChannel is the LISTEN/NOTIFY channel that wakes replicas when a
// bundle is published. A notification is only a wake-up: a replica reads
// the published bundle from the table, and rescans after reconnecting.
const bundleChannel = "awaken_bundles"

// BundleHash is the content address of a plugin directory's files: the
// SHA-256 of their slash-separated paths and contents, in path order.
func BundleHash(files map[string][]byte) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%d:%s\x00%d:", len(p), p, len(files[p]))
		h.Write(files[p])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Publish stores the files as a bundle (once per content), makes it the
// published one and wakes the replicas, in one transaction. It returns the
// bundle's hash.
func (s *Store) Publish(ctx context.Context, files map[string][]byte) (string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	hash := BundleHash(files)
	body, err := json.Marshal(files)
	if err != nil {
		return "", err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO awaken_bundles (hash, files) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, hash, body); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO awaken_published (id, hash) VALUES (1, $1)
			ON CONFLICT (id) DO UPDATE SET hash = excluded.hash, published_at = now()`, hash); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", bundleChannel, hash)
		return err
	})
	if err != nil {
		return "", unavailable(err, "publish the bundle")
	}
	return hash, nil
}

// Published returns the published bundle's hash ("" while none is).
func (s *Store) Published(ctx context.Context) (string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var hash string
	err := s.pool.QueryRow(ctx, "SELECT hash FROM awaken_published WHERE id = 1").Scan(&hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", unavailable(err, "read the published bundle")
	}
	return hash, nil
}

// Bundle returns a bundle's files.
func (s *Store) Bundle(ctx context.Context, hash string) (map[string][]byte, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var body []byte
	err := s.pool.QueryRow(ctx, "SELECT files FROM awaken_bundles WHERE hash = $1", hash).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("pgstore: no bundle %s in the database", hash)
	}
	if err != nil {
		return nil, unavailable(err, "read bundle "+hash)
	}
	var files map[string][]byte
	if err := json.Unmarshal(body, &files); err != nil {
		return nil, fmt.Errorf("pgstore: bundle %s is not valid: %w", hash, err)
	}
	if BundleHash(files) != hash {
		return nil, fmt.Errorf("pgstore: bundle %s does not match its hash", hash)
	}
	return files, nil
}

// Listen calls wake when a bundle is published, and once after each
// (re)connection, since a notification sent while disconnected is lost.
// It returns when ctx ends; connection failures are retried.
func (s *Store) Listen(ctx context.Context, wake func()) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			break
		}
		_ = err // the next connection rescans; the pool's own errors show in /readyz
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	return ctx.Err()
}

func (s *Store) listenOnce(ctx context.Context, wake func()) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+bundleChannel); err != nil {
		return err
	}
	defer s.cleanUp(ctx, func(ctx context.Context) { conn.Exec(ctx, "UNLISTEN "+bundleChannel) })
	wake() // whatever was published while this replica was not listening
	for {
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			return err
		}
		wake()
	}
}
