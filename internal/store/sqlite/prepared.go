package sqlite

import (
	"context"
	"database/sql"
	"strings"
)

// Statements are prepared once per Store on the *sql.DB and reused:
// database/sql keeps each one's prepared form per connection, so a read
// on the pool and Tx.StmtContext in a write transaction both find it
// already parsed (a statement prepared on a sql.Conn would be parsed
// again by every Tx.StmtContext). The set of query strings is fixed in
// this package's code; maxPrepared bounds it all the same.
const maxPrepared = 256

// prepared returns the cached statement for q, preparing it on first use.
// It returns nil when q is not to be cached (not cacheable, or the cache
// is full): the caller runs q unprepared. It returns the error when q
// cannot be prepared on a pooled connection (a table missing, or one
// that only the caller's transaction has created).
func (s *Store) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	if !cacheable(q) {
		return nil, nil
	}
	if st, ok := s.stmts.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.stmts.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	if s.nstmts >= maxPrepared {
		return nil, nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s.nstmts++
	s.stmts.Store(q, st)
	return st, nil
}

// cacheable reports whether q is a single data statement worth keeping
// prepared; schema scripts and migrations run as they are.
func cacheable(q string) bool {
	q = strings.TrimLeft(q, " \t\n")
	for _, p := range []string{"SELECT", "INSERT", "UPDATE", "DELETE", "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", dataVersionQuery} {
		if strings.HasPrefix(q, p) {
			return true
		}
	}
	return false
}

// closeStatements closes every cached statement (Close).
func (s *Store) closeStatements() {
	s.stmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		s.stmts.Delete(k)
		return true
	})
}

// A short read (one row by key, a sweep's probe) runs on the write
// connection when no write holds it: that connection's page cache is hot
// (it wrote the pages), where a pooled connection drops its whole cache
// whenever another connection has committed. A long read (a listing, a
// history) runs on the pool and never holds up writers.

// onWriteConn takes writeMu if it is free and the write connection is
// open; the caller unlocks.
func (s *Store) onWriteConn() bool {
	if !s.writeMu.TryLock() {
		return false
	}
	if s.wconn == nil || s.closing {
		s.writeMu.Unlock()
		return false
	}
	return true
}

// wstmt is q prepared on the write connection, for its transactions and
// for short reads (a statement bound to a sql.Conn stays prepared there),
// or nil: q is then run unprepared. The caller holds writeMu.
func (s *Store) wstmt(ctx context.Context, q string) *sql.Stmt {
	if st, ok := s.wstmts[q]; ok {
		return st
	}
	if !cacheable(q) || len(s.wstmts) >= maxPrepared {
		return nil
	}
	st, err := s.wconn.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	if s.wstmts == nil {
		s.wstmts = map[string]*sql.Stmt{}
	}
	s.wstmts[q] = st
	return st
}

// closeWriteStatements closes the write connection's statements; the
// caller holds writeMu.
func (s *Store) closeWriteStatements() {
	for q, st := range s.wstmts {
		st.Close()
		delete(s.wstmts, q)
	}
}

// readRows runs q and hands each row to scan: on the write connection
// when short and it is free, else on the pool.
func (s *Store) readRows(ctx context.Context, short bool, q string, args []any, scan func(*sql.Rows) error) error {
	if short && s.onWriteConn() {
		defer s.writeMu.Unlock()
		if st := s.wstmt(ctx, q); st != nil {
			return eachRow(st.QueryContext(context.WithoutCancel(ctx), args...))(scan)
		}
	}
	st, err := s.prepared(ctx, q)
	if err != nil {
		return err
	}
	if st == nil {
		return eachRow(s.db.QueryContext(ctx, q, args...))(scan)
	}
	return eachRow(st.QueryContext(ctx, args...))(scan)
}

func eachRow(rows *sql.Rows, err error) func(func(*sql.Rows) error) error {
	return func(scan func(*sql.Rows) error) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
}

// row is a single-row read, run when it is scanned (a short read).
type row struct {
	s    *Store
	ctx  context.Context
	q    string
	args []any
}

func (r row) Scan(dest ...any) error {
	s, ctx := r.s, r.ctx
	if s.onWriteConn() {
		defer s.writeMu.Unlock()
		if st := s.wstmt(ctx, r.q); st != nil {
			return st.QueryRowContext(context.WithoutCancel(ctx), r.args...).Scan(dest...)
		}
	}
	st, err := s.prepared(ctx, r.q)
	if err != nil {
		return err
	}
	if st == nil {
		return s.db.QueryRowContext(ctx, r.q, r.args...).Scan(dest...)
	}
	return st.QueryRowContext(ctx, r.args...).Scan(dest...)
}

// queryRow is a read of one row.
func (s *Store) queryRow(ctx context.Context, q string, args ...any) row {
	return row{s: s, ctx: ctx, q: q, args: args}
}

// txn is a write transaction of this store, on the write connection:
// BEGIN IMMEDIATE … COMMIT run as statements there (writeOnce), and every
// statement in between is one prepared on that connection once and kept
// (wstmt), with no *sql.Tx to re-bind it each time. The methods have
// *sql.Tx's signatures.
type txn struct {
	s *Store
}

// Statements in a write transaction, and short reads on the write
// connection, are short: they run with ctx's values but not its
// cancellation (the driver would start a goroutine per statement to watch
// it). A write observes cancellation at BEGIN, in the BeforeCommit hook
// and before COMMIT (writeOnce).

// ExecContext runs q in the transaction.
func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	ctx = context.WithoutCancel(ctx)
	if st := t.s.wstmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.s.wconn.ExecContext(ctx, q, args...)
}

// QueryContext runs q in the transaction.
func (t *txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx = context.WithoutCancel(ctx)
	if st := t.s.wstmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.s.wconn.QueryContext(ctx, q, args...)
}

// QueryRowContext runs q in the transaction.
func (t *txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	ctx = context.WithoutCancel(ctx)
	if st := t.s.wstmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.s.wconn.QueryRowContext(ctx, q, args...)
}
