// Package pgstore keeps threads and runs in PostgreSQL, so several sidecar
// replicas share them: any replica serves any call of any run. Every write
// is one statement guarded by a revision (compare and swap): a thread by
// its Revision, a run by its save count (Checkpoint.Seq), so two replicas
// can never both commit on the same base; the loser gets
// revision_conflict. The schema is embedded and versioned; Migrate brings
// a database to the current version.
package pgstore

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/run"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options configure a Store.
type Options struct {
	// MaxConns bounds the pool's connections (0: pgx's default).
	MaxConns int32
	// StatementTimeout bounds each statement in the database (a lock wait
	// included), and a transaction left idle there; each call waits at
	// most twice as long on this side, for a database that does not
	// answer at all (0: DefaultStatementTimeout).
	StatementTimeout time.Duration
}

// DefaultStatementTimeout is Options.StatementTimeout's default: a phase
// call takes milliseconds, so a statement this slow is stuck.
const DefaultStatementTimeout = 10 * time.Second

// Store is a run.Store in PostgreSQL.
type Store struct {
	pool    *pgxpool.Pool
	timeout time.Duration // Options.StatementTimeout
}

// Open connects to the database named by dsn. It does not migrate: call
// Migrate (serve does at start; awaken-lua migrate runs it alone).
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errs.Wrap(errs.ConfigInvalid, err, "the PostgreSQL connection string is not valid; set it as a libpq DSN or URL such as postgres://user@host/db")
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	timeout := o.StatementTimeout
	if timeout <= 0 {
		timeout = DefaultStatementTimeout
	}
	// Set once a session starts rather than as startup parameters, which
	// a pooler in front of the database (PgBouncer) may refuse. Without
	// the timeouts a lock held by a stopped replica's transaction would
	// hold every save of that run, and the row, forever. The saves'
	// compare and swap counts on read committed, whatever the database's
	// default: under a stricter one a save that loses a race fails with
	// a serialization error (a 503, retried on the stale base) rather
	// than finding no row at its base (revision_conflict). And a save is
	// acknowledged once committed, so commits wait for the WAL to be
	// flushed: with synchronous_commit off (a database tuned for speed)
	// a crash of the database loses saves it acknowledged. A stricter
	// setting (remote_apply, for a standby) is kept.
	ms := strconv.FormatInt(timeout.Milliseconds(), 10)
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET statement_timeout = "+ms+"; SET idle_in_transaction_session_timeout = "+ms+
			"; SET default_transaction_isolation = 'read committed'"+
			"; SELECT set_config('synchronous_commit', 'on', false) WHERE current_setting('synchronous_commit') = 'off'")
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, unavailable(err, "connect to PostgreSQL")
	}
	return &Store{pool: pool, timeout: timeout}, nil
}

// bound limits a call to twice the statement timeout on this side: a
// database that stops answering (a hung server, a dropped network) never
// ends a statement by its own timeout. The database's own timeout comes
// first when it does answer, and says which statement was slow.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 2*s.timeout)
}

// cleanUp runs f, a statement that ends what a call began (UNLISTEN, a
// rollback, an unlock), even once the call's context ended, but bounded
// as a call is: a database that stopped answering would otherwise hold
// it, and its connection, and Close waiting for that, forever.
func (s *Store) cleanUp(ctx context.Context, f func(context.Context)) {
	ctx, cancel := s.bound(context.WithoutCancel(ctx))
	defer cancel()
	f(ctx)
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Migrate applies the embedded migrations the database lacks, in order,
// each in a transaction, under an advisory lock so that replicas starting
// together do not race. It returns the versions it applied.
func (s *Store) Migrate(ctx context.Context) ([]int, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, unavailable(err, "connect to PostgreSQL to migrate")
	}
	defer conn.Release()
	const lock = 0x61776b6e // "awkn"
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lock); err != nil {
		return nil, unavailable(err, "lock the schema for migration")
	}
	defer s.cleanUp(ctx, func(ctx context.Context) { conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", lock) })
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS awaken_schema (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, unavailable(err, "create the schema table")
	}
	have := map[int]bool{}
	rows, err := conn.Query(ctx, "SELECT version FROM awaken_schema")
	if err != nil {
		return nil, unavailable(err, "read the schema version")
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, unavailable(err, "read the schema version")
		}
		have[v] = true
	}
	rows.Close()
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var applied []int
	for _, f := range files {
		base := strings.TrimPrefix(f, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("pgstore: migration %s has no version number", f)
		}
		if have[v] {
			continue
		}
		sql, _ := migrations.ReadFile(f)
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO awaken_schema (version) VALUES ($1)", v)
			return err
		})
		if err != nil {
			return applied, unavailable(err, "apply migration "+base)
		}
		applied = append(applied, v)
	}
	return applied, nil
}

// SchemaVersion is the newest migration this build embeds.
func SchemaVersion() int {
	files, _ := fs.Glob(migrations, "migrations/*.sql")
	top := 0
	for _, f := range files {
		v, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(f, "migrations/"), "_", 2)[0])
		top = max(v, top)
	}
	return top
}

// Thread implements run.Store.
func (s *Store) Thread(ctx context.Context, id string) (run.Thread, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var body []byte
	var rev uint64
	err := s.pool.QueryRow(ctx, "SELECT revision, body FROM awaken_threads WHERE id = $1", id).Scan(&rev, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return run.Thread{}, false, nil
	}
	if err != nil {
		return run.Thread{}, false, unavailable(err, "read thread "+id)
	}
	var t run.Thread
	if err := json.Unmarshal(body, &t); err != nil {
		return run.Thread{}, false, fmt.Errorf("pgstore: thread %s is not valid JSON: %w", id, err)
	}
	t.Revision = rev
	return t, true, nil
}

// PutThread implements run.Store: it saves t if the stored revision is
// still t.Revision (0: the thread must not exist), with a new revision
// from a sequence shared by every thread. A save whose reply is lost is
// settled (see settle) before it answers.
func (s *Store) PutThread(ctx context.Context, t run.Thread) (uint64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	body, err := json.Marshal(t)
	if err != nil {
		return 0, fmt.Errorf("pgstore: encode thread %s: %w", t.ID, err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, unavailable(err, "save thread "+t.ID)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	rev, err := nextRevision(ctx, conn, t.ID)
	if err != nil {
		return 0, err
	}
	err = putThread(ctx, conn, t, body, rev)
	if ambiguous(err) {
		conn.Release() // settle needs a connection of the pool: this one is lost
		err = s.settle(ctx, pid, err, "save thread "+t.ID, "read the thread to see its revision",
			`SELECT coalesce((SELECT revision = $2 FROM awaken_threads WHERE id = $1), false), `+threadMoved,
			t.ID, int64(rev), int64(t.Revision))
		if err == nil {
			return rev, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, err
		}
	}
	if err != nil {
		return 0, threadError(err, t)
	}
	return rev, nil
}

// threadMoved is the SQL of whether thread $1 is no longer at revision $3
// (0: whether it exists): another save on the same base won.
const threadMoved = `CASE WHEN $3 = 0 THEN EXISTS (SELECT 1 FROM awaken_threads WHERE id = $1)
	ELSE NOT EXISTS (SELECT 1 FROM awaken_threads WHERE id = $1 AND revision = $3) END`

// querier is the pool, a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// nextRevision takes the revision a thread's save writes before the save
// runs, so that a save whose reply is lost can be told by it: the
// sequence hands each value out once, so the thread holds it only if
// that save committed. A failure here wrote nothing.
func nextRevision(ctx context.Context, q querier, id string) (uint64, error) {
	var rev int64
	if err := q.QueryRow(ctx, "SELECT nextval('awaken_revisions')").Scan(&rev); err != nil {
		return 0, unavailable(err, "save thread "+id)
	}
	return uint64(rev), nil
}

// putThread writes t (encoded as body) at revision rev if it is still at
// t.Revision; if not, pgx.ErrNoRows. Other errors are the database's, as
// they came (see ambiguous); threadError words them.
func putThread(ctx context.Context, q querier, t run.Thread, body []byte, rev uint64) error {
	var tag pgconn.CommandTag
	var err error
	if t.Revision == 0 {
		tag, err = q.Exec(ctx, `INSERT INTO awaken_threads (id, revision, waiting, body) VALUES ($1, $2, $3, $4)
			ON CONFLICT (id) DO NOTHING`, t.ID, int64(rev), t.Waiting, body)
	} else {
		tag, err = q.Exec(ctx, `UPDATE awaken_threads SET revision = $5, waiting = $3, body = $4
			WHERE id = $1 AND revision = $2`, t.ID, int64(t.Revision), t.Waiting, body, int64(rev))
	}
	if err == nil && tag.RowsAffected() == 0 {
		return pgx.ErrNoRows
	}
	return err
}

// threadError words putThread's error: pgx.ErrNoRows is a revision
// conflict, anything else the database's failure.
func threadError(err error, t run.Thread) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return errs.New(errs.RevisionConflict, "thread %q was saved by another run or replica since (expected revision %d); run again", t.ID, t.Revision)
	}
	return unavailable(err, "save thread "+t.ID)
}

// Run implements run.Store: the saved checkpoint with the changes saved
// since applied in order.
func (s *Store) Run(ctx context.Context, id string) (run.Checkpoint, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT 0, body FROM awaken_runs WHERE id = $1
		UNION ALL SELECT seq, body FROM awaken_run_deltas WHERE run_id = $1 ORDER BY 1`, id)
	if err != nil {
		return run.Checkpoint{}, false, unavailable(err, "read run "+id)
	}
	defer rows.Close()
	var cp run.Checkpoint
	found, deltas := false, 0
	for rows.Next() {
		var seq int64
		var body []byte
		if err := rows.Scan(&seq, &body); err != nil {
			return run.Checkpoint{}, false, unavailable(err, "read run "+id)
		}
		if seq == 0 {
			if err := json.Unmarshal(body, &cp); err != nil {
				return run.Checkpoint{}, false, corruptRun(id, fmt.Errorf("it is not valid JSON: %w", err))
			}
			found = true
			continue
		}
		if !found || uint64(seq) <= cp.Seq {
			continue // a change the saved checkpoint already holds
		}
		var d run.Delta
		if err := json.Unmarshal(body, &d); err != nil {
			return run.Checkpoint{}, false, corruptRun(id, fmt.Errorf("its save %d is not valid JSON: %w", seq, err))
		}
		if err := cp.Apply(d); err != nil {
			return run.Checkpoint{}, false, corruptRun(id, fmt.Errorf("its save %d does not apply: %w", seq, err))
		}
		deltas++
	}
	if err := rows.Err(); err != nil {
		return run.Checkpoint{}, false, unavailable(err, "read run "+id)
	}
	if found && deltas > compactAfter {
		s.compact(ctx, cp)
	}
	return cp, found, nil
}

// corruptRun is a run the database holds but that cannot be read back:
// run_lost, not a failure of the database (a 503 to retry, and a replica
// marked unready at each call on it), since a retry reads the same rows.
func corruptRun(id string, err error) error {
	return errs.Wrap(errs.RunLost, err, "run %s in the database cannot be restored, so its pending decisions are lost; "+
		"delete its rows from awaken_runs and awaken_run_deltas to let its thread start another run", id)
}

// compactAfter is how many saved changes a read applies before it writes
// the run back whole, so reading a long run stays cheap.
const compactAfter = 64

// compact writes cp (read at its latest save) as the run's checkpoint and
// drops the changes it holds, unless another save came in between. A
// failure only means the next read compacts.
func (s *Store) compact(ctx context.Context, cp run.Checkpoint) {
	body, err := json.Marshal(cp)
	if err != nil {
		return
	}
	s.pool.Exec(ctx, `WITH u AS (UPDATE awaken_runs SET body = $3, base_seq = $2 WHERE id = $1 AND seq = $2 RETURNING id)
		DELETE FROM awaken_run_deltas WHERE run_id IN (SELECT id FROM u) AND seq <= $2`, cp.RunID, cp.Seq, body)
}

// AppendRun implements run.RunLog: it saves what changed since save
// d.Base, if the run is still at that save (compare and swap), as one
// statement; otherwise revision_conflict and nothing is written.
func (s *Store) AppendRun(ctx context.Context, d run.Delta) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	body, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("pgstore: encode a change of run %s: %w", d.RunID, err)
	}
	var expiry any
	if !d.NextExpiry.IsZero() {
		expiry = d.NextExpiry
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return unavailable(err, "save run "+d.RunID)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	var behind int64
	err = conn.QueryRow(ctx, `WITH u AS (UPDATE awaken_runs SET seq = $2 + 1, status = $3,
			next_expiry = CASE WHEN $3 = 'waiting' THEN $5::timestamptz END, expiry_claim = NULL, updated_at = now()
			WHERE id = $1 AND seq = $2 RETURNING id, seq - base_seq AS behind),
		i AS (INSERT INTO awaken_run_deltas (run_id, seq, body) SELECT id, $2 + 1, $4 FROM u)
		SELECT behind FROM u`, d.RunID, d.Base, string(d.Status), body, expiry).Scan(&behind)
	if ambiguous(err) {
		conn.Release() // settle needs a connection of the pool: this one is lost
		err = s.settle(ctx, pid, err, "save run "+d.RunID, runHint, `SELECT coalesce((SELECT body = $3 FROM awaken_run_deltas WHERE run_id = $1 AND seq = $2 + 1), false),
			coalesce((SELECT seq > $2 FROM awaken_runs WHERE id = $1), false)`, d.RunID, d.Base, body)
		if err == nil || !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return errs.New(errs.RevisionConflict, "run %s was saved by another replica since this one loaded it (save %d); call again", d.RunID, d.Base+1)
	}
	if err != nil {
		return unavailable(err, "save run "+d.RunID)
	}
	if behind > 4*compactAfter {
		// Reading compacts it, on a connection of its own: holding this
		// one meanwhile, saves compacting at once would wait for each
		// other (a pool of one, for itself).
		conn.Release()
		s.Run(ctx, d.RunID)
	}
	return nil
}

// RunSeq returns how many times a run was saved (its Checkpoint.Seq), so a
// replica can tell whether the copy it holds is still the latest.
func (s *Store) RunSeq(ctx context.Context, id string) (uint64, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var seq uint64
	err := s.pool.QueryRow(ctx, "SELECT seq FROM awaken_runs WHERE id = $1", id).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, unavailable(err, "read run "+id)
	}
	return seq, true, nil
}

// PutRun implements run.Store as a compare and swap on the run's save
// count: cp (its Seq-th save) replaces the stored run only if that is its
// save Seq-1, and a first save (Seq 1, or 0 from a host that does not
// count) only a run that is not stored. Otherwise another replica saved
// the run since, and nothing is written: revision_conflict.
func (s *Store) PutRun(ctx context.Context, cp run.Checkpoint) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	body, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("pgstore: encode run %s: %w", cp.RunID, err)
	}
	var expiry any
	if at := cp.NextExpiry(); !at.IsZero() {
		expiry = at
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return unavailable(err, "save run "+cp.RunID)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	var tag pgconn.CommandTag
	if cp.Seq <= 1 {
		tag, err = conn.Exec(ctx, `INSERT INTO awaken_runs (id, thread_id, seq, base_seq, status, next_expiry, body) VALUES ($1, $2, $3, $3, $4, $5, $6)
			ON CONFLICT (id) DO NOTHING`, cp.RunID, cp.ThreadID, cp.Seq, string(cp.Status), expiry, body)
	} else {
		var n int64
		err = conn.QueryRow(ctx, `WITH u AS (UPDATE awaken_runs SET thread_id = $2, seq = $3, base_seq = $3, status = $4, next_expiry = $5, body = $6,
				updated_at = now(), expiry_claim = NULL WHERE id = $1 AND seq = $3 - 1 RETURNING id),
			d AS (DELETE FROM awaken_run_deltas WHERE run_id IN (SELECT id FROM u))
			SELECT count(*) FROM u`, cp.RunID, cp.ThreadID, cp.Seq, string(cp.Status), expiry, body).Scan(&n)
		tag = pgconn.NewCommandTag(fmt.Sprintf("UPDATE %d", n))
	}
	if ambiguous(err) {
		conn.Release() // settle needs a connection of the pool: this one is lost
		err = s.settle(ctx, pid, err, "save run "+cp.RunID, runHint, `SELECT coalesce((SELECT base_seq = $2 AND body = $3 FROM awaken_runs WHERE id = $1), false),
			coalesce((SELECT seq >= $2 FROM awaken_runs WHERE id = $1), false)`, cp.RunID, cp.Seq, body)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		tag, err = pgconn.NewCommandTag("UPDATE 0"), nil
	}
	if err != nil {
		return unavailable(err, "save run "+cp.RunID)
	}
	if tag.RowsAffected() == 0 {
		return errs.New(errs.RevisionConflict, "run %s was saved by another replica since this one loaded it (save %d); call again", cp.RunID, cp.Seq)
	}
	return nil
}

// ClaimExpired implements run.ExpiryClaimer: it claims, for lease, up to
// limit waiting runs whose earliest approval expired by now and that no
// other replica holds a live claim on (FOR UPDATE SKIP LOCKED: replicas
// claiming at once never wait for, nor take, each other's rows).
//
// Claims are timed by the database's clock, the one clock every replica
// shares: timed by the caller's, a replica whose clock runs ahead by more
// than the lease would take the claims of the others as they hold them.
// Whether an approval expired is the caller's clock (now), as it is the
// caller that settles the run by it.
func (s *Store) ClaimExpired(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `UPDATE awaken_runs SET expiry_claim = clock_timestamp() + make_interval(secs => $2)
		WHERE id IN (SELECT id FROM awaken_runs
			WHERE status = 'waiting' AND next_expiry <= $1 AND (expiry_claim IS NULL OR expiry_claim < clock_timestamp())
			ORDER BY next_expiry LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING id`, now, lease.Seconds(), limit)
	if err != nil {
		return nil, unavailable(err, "claim expired runs")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, unavailable(err, "claim expired runs")
	}
	return ids, nil
}

// FinishRun implements run.Finisher in one transaction: the run must be
// at save seq (or, with seq 0, never saved: not stored), the thread at
// its revision, and then the thread is written and the run forgotten;
// otherwise nothing is, and the error is revision_conflict (another
// replica saved the run, an approval say, or the thread since, or ended
// or deleted the run). A statement whose reply is lost, COMMIT's
// included, is settled (see settle) before it answers.
func (s *Store) FinishRun(ctx context.Context, t run.Thread, runID string, seq uint64) (uint64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	body, err := json.Marshal(t)
	if err != nil {
		return 0, fmt.Errorf("pgstore: encode thread %s: %w", t.ID, err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, unavailable(err, "finish run "+runID)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, unavailable(err, "finish run "+runID)
	}
	defer s.cleanUp(ctx, func(ctx context.Context) { tx.Rollback(ctx) }) // after Commit, a no-op
	var rev uint64
	lost := func(err error) (uint64, error) {
		s.cleanUp(ctx, func(ctx context.Context) { tx.Rollback(ctx) })
		conn.Release() // settle needs a connection of the pool: this one is lost
		err = s.settle(ctx, pid, err, "finish run "+runID, runHint,
			`SELECT coalesce((SELECT revision = $2 FROM awaken_threads WHERE id = $1), false),
				(`+threadMoved+`) OR EXISTS (SELECT 1 FROM awaken_runs WHERE id = $4 AND seq <> $5)`,
			t.ID, int64(rev), int64(t.Revision), runID, int64(seq))
		switch {
		case err == nil:
			return rev, nil
		case errors.Is(err, pgx.ErrNoRows):
			return 0, errs.New(errs.RevisionConflict, "run %s or its thread %q was saved by another replica since this one loaded them; call again", runID, t.ID)
		}
		return 0, err
	}
	var stored int64
	switch err := tx.QueryRow(ctx, `SELECT seq FROM awaken_runs WHERE id = $1 FOR UPDATE`, runID).Scan(&stored); {
	case errors.Is(err, pgx.ErrNoRows) && seq > 0:
		// Saved once, so another replica forgot it since: deleted it
		// (DELETE on a running run does not write the thread, so the
		// thread's revision would not tell), or ended it.
		return 0, errs.New(errs.RevisionConflict, "run %s was ended or deleted by another replica since this one loaded it (save %d); call again", runID, seq)
	case errors.Is(err, pgx.ErrNoRows):
	case lostInTx(err):
		return lost(err)
	case err != nil:
		return 0, unavailable(err, "finish run "+runID)
	case uint64(stored) != seq:
		return 0, errs.New(errs.RevisionConflict, "run %s was saved by another replica since this one loaded it (save %d, not %d); call again", runID, stored, seq)
	}
	if rev, err = nextRevision(ctx, tx, t.ID); lostInTx(err) {
		return lost(err)
	} else if err != nil {
		return 0, err
	}
	if err := putThread(ctx, tx, t, body, rev); lostInTx(err) {
		return lost(err)
	} else if err != nil {
		return 0, threadError(err, t)
	}
	if err := deleteRun(ctx, tx, runID); lostInTx(err) {
		return lost(err)
	} else if err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); lostInTx(err) {
		return lost(err)
	} else if err != nil {
		return 0, unavailable(err, "finish run "+runID)
	}
	return rev, nil
}

// lostInTx reports whether a statement of a transaction failed without
// the database saying why: its reply was lost, and for COMMIT the
// transaction may have committed. ambiguous cannot tell this for a
// statement without arguments (COMMIT, nextval): pgx sends it with the
// simple protocol and, its reply lost, reports the closed connection as
// safe to retry although the statement was sent. Settling one that was
// not sent costs a check, and ends a session that held the
// transaction's row locks.
func lostInTx(err error) bool {
	var pe *pgconn.PgError
	return err != nil && !errors.Is(err, pgx.ErrNoRows) && !errors.Is(err, pgx.ErrTxCommitRollback) && !errors.As(err, &pe)
}

// DeleteRun implements run.Store. A delete whose reply is lost is run
// again on another connection (it may have committed, and forgetting is
// idempotent), so that an error means the run is still stored: the
// sidecar then keeps it, and a retried DELETE would find it gone.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	return s.deleteTwice(ctx, func(ctx context.Context) error { return deleteRun(ctx, s.pool, id) })
}

// DeleteRunAt implements run.SeqDeleter. As DeleteRun, a delete whose
// reply is lost is run again: at the same save it is idempotent too.
func (s *Store) DeleteRunAt(ctx context.Context, id string, seq uint64) error {
	return s.deleteTwice(ctx, func(ctx context.Context) error { return s.deleteRunAt(ctx, id, seq) })
}

// deleteTwice runs an idempotent delete, bounded, and once more when its
// reply was lost.
func (s *Store) deleteTwice(ctx context.Context, del func(context.Context) error) error {
	bctx, cancel := s.bound(ctx)
	defer cancel()
	err := del(bctx)
	if ambiguous(err) {
		// The lost session may still hold the rows: the retry waits for
		// it, by the statement timeout, on a deadline of its own.
		again, cancel := s.bound(context.WithoutCancel(ctx))
		defer cancel()
		err = del(again)
	}
	return err
}

func (s *Store) deleteRunAt(ctx context.Context, id string, seq uint64) error {
	var n int64
	err := s.pool.QueryRow(ctx, `WITH r AS (DELETE FROM awaken_runs WHERE id = $1 AND seq = $2 RETURNING id),
			d AS (DELETE FROM awaken_run_deltas WHERE run_id IN (SELECT id FROM r))
		SELECT count(*) FROM r`, id, int64(seq)).Scan(&n)
	if err != nil {
		return unavailable(err, "forget run "+id)
	}
	if n > 0 {
		return nil
	}
	// Nothing deleted: gone already, or at another save. A statement of
	// its own, so that it sees a save that committed while the delete
	// waited for the row.
	var stored int64
	switch err := s.pool.QueryRow(ctx, "SELECT seq FROM awaken_runs WHERE id = $1", id).Scan(&stored); {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return unavailable(err, "forget run "+id)
	}
	return errs.New(errs.RevisionConflict, "run %s was saved by another replica since this one loaded it (save %d, not %d), so it was not deleted; call again", id, stored, seq)
}

func deleteRun(ctx context.Context, q querier, id string) error {
	if _, err := q.Exec(ctx, `WITH d AS (DELETE FROM awaken_run_deltas WHERE run_id = $1)
		DELETE FROM awaken_runs WHERE id = $1`, id); err != nil {
		return unavailable(err, "forget run "+id)
	}
	return nil
}

// Probe implements run.Prober: the database answers and the schema is there.
func (s *Store) Probe(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var v int
	if err := s.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM awaken_schema").Scan(&v); err != nil {
		return unavailable(err, "reach PostgreSQL")
	}
	if v < SchemaVersion() {
		return errs.New(errs.NotReady, "the database schema is at version %d and this awaken-lua needs %d; run awaken-lua migrate", v, SchemaVersion())
	}
	return nil
}

// ambiguous reports whether a statement's error leaves its outcome
// unknown: it was sent (pgx could not call it safe to retry), and the
// database did not answer (an error it reports means the statement
// failed, and so changed nothing). The connection was lost or the
// context ended while the database ran it: it may have committed.
func ambiguous(err error) bool {
	if err == nil || errors.Is(err, pgx.ErrNoRows) || pgconn.SafeToRetry(err) {
		return false
	}
	var pe *pgconn.PgError
	return !errors.As(err, &pe)
}

// settle finds out whether a save whose outcome is unknown (see
// ambiguous) committed: it ends the database session that ran it (pid),
// waiting until that session is gone so that its transaction is over one
// way or the other, then asks check (with args) two things: is the save
// there (committed: nil), and is the run or thread past the save's base
// (another replica's save won: pgx.ErrNoRows, which the caller reports as
// a revision conflict). Otherwise the save did not commit: err, as
// unavailable. When it cannot tell, it says so, and hint how to find
// out. It asks on a connection
// of the pool, so the caller gives the lost one back first: with every
// connection held (a pool of one, or a network failure that cut a save
// on each) it would wait for itself until its deadline.
func (s *Store) settle(ctx context.Context, pid uint32, err error, what, hint, check string, args ...any) error {
	ctx, cancel := s.bound(context.WithoutCancel(ctx))
	defer cancel()
	var gone bool
	qerr := s.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1, $2) OR NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)`,
		int64(pid), s.timeout.Milliseconds()/2).Scan(&gone)
	var committed, behind bool
	if qerr == nil && gone {
		qerr = s.pool.QueryRow(ctx, check, args...).Scan(&committed, &behind)
	}
	switch {
	case qerr != nil || !gone:
		if qerr == nil {
			qerr = fmt.Errorf("the session %d that ran it did not end", pid)
		}
		return unknownOutcome{fmt.Errorf("pgstore: %s: the connection was lost while the database ran the save, and whether it committed "+
			"cannot be told now (%v); %s: %w", what, qerr, hint, err)}
	case committed:
		return nil
	case behind:
		return pgx.ErrNoRows
	}
	return unavailable(err, what)
}

// unknownOutcome is settle's error when it cannot tell: the save may have
// committed, which the sidecar's reply must not deny (see
// run.OutcomeUnknown).
type unknownOutcome struct{ error }

func (unknownOutcome) OutcomeUnknown() bool { return true }
func (u unknownOutcome) Unwrap() error      { return u.error }

// runHint tells how to find out what settle could not.
const runHint = "GET the run to see its save count"

// unavailable wraps a database failure: the store could not do what was
// asked, and nothing was written.
func unavailable(err error, what string) error {
	if advice := adviceFor(err); advice != "" {
		return fmt.Errorf("pgstore: %s: %w (%s)", what, err, advice)
	}
	return fmt.Errorf("pgstore: %s: %w", what, err)
}

// adviceFor says what to do about a database error that a retry does not
// cure (the sidecar's 503 says "retry it"), or "".
func adviceFor(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		if errors.Is(err, context.DeadlineExceeded) {
			return "the database did not answer in time: check that it is up and reachable from this replica"
		}
		return ""
	}
	switch pe.Code {
	case "57014": // query_canceled: statement_timeout
		return "a statement ran past [store] statement_timeout: another session may hold the row's lock (look for old transactions in pg_stat_activity), or the database is overloaded"
	case "25006": // read_only_sql_transaction
		return "the database is read-only, a standby or set so: point the store's DSN at the writable primary"
	case "53100": // disk_full
		return "the database server's disk is full: free space there"
	case "53300": // too_many_connections
		return "the database has no connection to spare: lower [store] max_conns on the replicas or raise its max_connections"
	case "28000", "28P01": // invalid_authorization_specification, invalid_password
		return "the database refused the credentials: check the DSN in the variable [store] dsn_env names"
	}
	return ""
}

// Kind implements run.Kinded.
func (s *Store) Kind() string { return "postgres" }
