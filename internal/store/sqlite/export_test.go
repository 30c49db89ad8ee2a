package sqlite

import "database/sql"

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
