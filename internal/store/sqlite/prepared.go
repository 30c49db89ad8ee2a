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
	for _, p := range []string{"SELECT", "INSERT", "UPDATE", "DELETE", "PRAGMA data_version"} {
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

// query runs a read on the pool with q's prepared statement.
func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := s.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return s.db.QueryContext(ctx, q, args...)
	}
	return st.QueryContext(ctx, args...)
}

// row is a single-row read whose statement may have failed to prepare.
type row struct {
	r   *sql.Row
	err error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.r.Scan(dest...)
}

// queryRow is query for one row.
func (s *Store) queryRow(ctx context.Context, q string, args ...any) row {
	st, err := s.prepared(ctx, q)
	if err != nil {
		return row{err: err}
	}
	if st == nil {
		return row{r: s.db.QueryRowContext(ctx, q, args...)}
	}
	return row{r: st.QueryRowContext(ctx, args...)}
}

// txn is a write transaction of this store: its statements come from the
// cache. The methods have *sql.Tx's signatures.
type txn struct {
	tx *sql.Tx
	s  *Store
	// dataVersion is PRAGMA data_version read once in this transaction
	// (liveHooks), valid when dvRead.
	dataVersion int64
	dvRead      bool
}

func (t *txn) stmt(ctx context.Context, q string) *sql.Stmt {
	st, err := t.s.prepared(ctx, q)
	if err != nil || st == nil {
		return nil // run unprepared in the transaction, which may see what the pool does not
	}
	return t.tx.StmtContext(ctx, st)
}

// ExecContext is (*sql.Tx).ExecContext through the statement cache.
func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, q, args...)
}

// QueryContext is (*sql.Tx).QueryContext through the statement cache.
func (t *txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, q, args...)
}

// QueryRowContext is (*sql.Tx).QueryRowContext through the statement cache.
func (t *txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, q, args...)
}
