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
