package sqlite

import (
	"context"
	"database/sql"
)

// DB exposes the handle to this package's tests.
func (s *Store) DB() *sql.DB { return s.db }

// DueQuery is the sweep's query, for plan checks.
const DueQuery = dueQuery

// V1Schema is the schema of a database made before the CURIE key.
const V1Schema = schema + approvalSchema

// WALFrames exposes the checkpoint hint: the WAL's length in frames and
// its backlog not yet checkpointed.
func (s *Store) WALFrames() (length, backlog int) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.walFrames()
}

// QueuedWrites is how many writes wait for the group commit's leader.
func (s *Store) QueuedWrites() int {
	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	return len(s.queue)
}

// GroupCommits is how many transactions have committed several writes.
func (s *Store) GroupCommits() int64 { return s.groupCommits.Load() }

// WriteConnTempStore is PRAGMA temp_store on the write connection (opened
// by a write first): 2 is MEMORY.
func (s *Store) WriteConnTempStore() (int, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.wconn == nil {
		return -1, nil
	}
	var v int
	err := s.wconn.QueryRowContext(context.Background(), "PRAGMA temp_store").Scan(&v)
	return v, err
}
