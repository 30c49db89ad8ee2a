package sqlite

import "database/sql"

// DB exposes the handle to this package's tests.
func (s *Store) DB() *sql.DB { return s.db }

// DueQuery is the sweep's query, for plan checks.
const DueQuery = dueQuery

// V1Schema is the schema of a database made before the CURIE key.
const V1Schema = schema + approvalSchema
