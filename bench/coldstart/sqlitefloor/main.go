// Command sqlitefloor is the cold-start floor of `dont show <id>`: the same
// work done the simplest way on the same driver. It opens the same
// .dont/dont.db with the DSN the embedded store uses (and its persistent
// WAL), lets SQLite parse the schema (the first statement does) and runs,
// in order, the statements a `dont show` runs — the schema version read,
// the sweep-first's one probe (is a spawn or question due, or an ending
// unannounced? nothing is, in the benchmark's project), then the entity
// read — and prints the document. Keep it in step with what show really runs (a driver that
// logs each prepared statement, wrapped around the store's, lists them).
// bench/coldstart times it beside dont.
package main

import (
	"database/sql"
	"fmt"
	"os"
	"time"

	"modernc.org/sqlite"
)

// Statements are the statements `dont show <id>` runs, in order: the
// schema version read that stands for every schema probe, the
// sweep-first's probe (internal/store/sqlite's anythingDueQuery: when it
// finds nothing due the sweep's reads are skipped), and the entity read.
var Statements = []string{
	"PRAGMA user_version",
	`SELECT
	EXISTS(SELECT 1 FROM spawns INDEXED BY spawns_due WHERE state = 'pending' AND expires_at <= ?),
	EXISTS(SELECT 1 FROM approvals INDEXED BY approvals_due WHERE state = 'pending' AND deadline <= ?),
	EXISTS(SELECT 1 FROM approvals INDEXED BY approvals_unannounced WHERE asked = 1 AND state = 'resolved' AND announced = 0)`,
	"SELECT doc FROM entities WHERE id = ?",
}

func main() {
	// The store keeps its WAL between runs; so does the floor, or each of
	// its runs would delete the files the next dont run makes again.
	sqlite.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, _ string) error {
		_, err := c.(sqlite.FileControl).FileControlPersistWAL("main", 1)
		return err
	})
	db, err := sql.Open("sqlite", "file:"+os.Args[1]+"?_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)&_pragma=journal_size_limit(4194304)&_txlock=immediate")
	check(err)
	defer db.Close()
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z")
	var version int
	check(db.QueryRow(Statements[0]).Scan(&version))
	var spawns, questions, endings bool
	check(db.QueryRow(Statements[1], now, now).Scan(&spawns, &questions, &endings))
	var doc []byte
	check(db.QueryRow(Statements[2], os.Args[2]).Scan(&doc))
	fmt.Println(string(doc))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "sqlitefloor:", err)
		os.Exit(1)
	}
}
