package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/awaken-lua/awaken-lua/journal"
)

// WriteLines implements journal.LineSink: one statement per batch. A
// batch whose reply is lost is settled (see settle): reported lost when
// it was written, its runs would be left out of the journal's readers.
func (s *Store) WriteLines(ctx context.Context, stream string, lines [][]byte) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return unavailable(err, "write the journal")
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	_, err = conn.Exec(ctx, `INSERT INTO awaken_journal (stream, line) SELECT $1, unnest($2::bytea[])`, stream, lines)
	if ambiguous(err) && len(lines) > 0 {
		conn.Release() // settle needs a connection of the pool: this one is lost
		// A line holds the hash of the one before it, so the batch's
		// last line is in its stream only if this batch wrote it.
		return s.settle(ctx, pid, err, "write the journal", "the journal counts the batch as lost",
			`SELECT EXISTS (SELECT 1 FROM awaken_journal WHERE stream = $1 AND line = $2), false`, stream, lines[len(lines)-1])
	}
	if err != nil {
		return unavailable(err, "write the journal")
	}
	return nil
}

// AgeOut implements journal.LineSink.
func (s *Store) AgeOut(ctx context.Context, before time.Time) error {
	// Whole streams only: a stream's first lines removed would break its
	// chain, and verify would report the rest as tampered.
	err := s.long(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM awaken_journal WHERE stream IN
			(SELECT stream FROM awaken_journal GROUP BY stream HAVING max(created_at) < $1)`, before)
		return err
	})
	if err != nil {
		return unavailable(err, "age out the journal")
	}
	return nil
}

// long runs f in a transaction free of the statement timeout: reading or
// aging out the whole journal takes as long as the journal is big, and
// a reader may take its time with each line.
func (s *Store) long(ctx context.Context, f func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = 0"); err != nil {
			return err
		}
		return f(tx)
	})
}

// JournalLines calls yield for each journal line in the order written,
// numbered within its stream, optionally only those written since.
func (s *Store) JournalLines(ctx context.Context, since time.Time, yield func(journal.Line) error) error {
	var yerr error
	err := s.long(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT stream, line FROM awaken_journal WHERE created_at >= $1 ORDER BY seq`, since)
		if err != nil {
			return err
		}
		defer rows.Close()
		n := map[string]int{}
		for rows.Next() {
			var l journal.Line
			if err := rows.Scan(&l.Stream, &l.Data); err != nil {
				return err
			}
			n[l.Stream]++
			l.N = n[l.Stream]
			if yerr = yield(l); yerr != nil {
				return yerr
			}
		}
		return rows.Err()
	})
	if yerr != nil {
		return yerr
	}
	if err != nil {
		return unavailable(err, "read the journal")
	}
	return nil
}

// Exec runs a statement on the database (tests and maintenance).
func (s *Store) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := s.pool.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}
