// Command sqlitefloor is the cold-start floor of `dont show <id>`: the same
// work done the simplest way on the same driver. It opens the same
// .dont/dont.db with the DSN the embedded store uses (and its persistent
// WAL), lets SQLite parse the schema (the first statement does) and runs,
// in order, the statements a `dont show` runs — the schema version read,
// the sweep-first's one probe (is a spawn or question due, or an ending
// unannounced? nothing is, in the benchmark's project), then the entity
// read — and prints the document in the envelope `dont show --json`
// prints (the same bytes but for its request id and duration). Keep it in
// step with what show really runs (a driver that logs each prepared
// statement, wrapped around the store's, lists them;
// TestTheColdStartFloorRunsTheStatementsShowRuns, internal/store/sqlite,
// holds each to the store's text). bench/coldstart times it beside dont.
package main

import (
	"database/sql"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"modernc.org/sqlite"
)

// Statements are the statements `dont show <id>` runs, in order: the
// schema version read that stands for every schema probe, the
// sweep-first's probe (internal/store/sqlite's anythingDueQuery, as it
// is: when it finds nothing due the sweep's reads are skipped), and the
// entity read (entityQuery).
var Statements = []string{
	"PRAGMA user_version",
	`SELECT
	EXISTS(SELECT 1 FROM spawns INDEXED BY spawns_due WHERE state = 'pending' AND expires_at <= ?1),
	EXISTS(SELECT 1 FROM approvals INDEXED BY approvals_due WHERE state = 'pending' AND deadline <= ?2)
		OR EXISTS(SELECT 1 FROM approval_reminders INDEXED BY approval_reminders_due WHERE remind_at <= ?2),
	EXISTS(SELECT 1 FROM approvals INDEXED BY approvals_unannounced WHERE asked = 1 AND state = 'resolved' AND announced = 0)`,
	"SELECT doc FROM entities WHERE id = ?",
}

func main() {
	start := time.Now()
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
	kind, _, _ := strings.Cut(os.Args[2], ":")
	fmt.Printf(`{"envelope_version":"1","cli_version":"0.1.0-dev","ok":true,"envelope_kind":%q,"data":%s,"hints":[],"warnings":[],"meta":{"duration_ms":%d,"request_id":"req:%s"}}`+"\n",
		kind, doc, time.Since(start).Milliseconds(), requestID())
}

// requestID is as long as the ULID dont gives a request: 48 bits of
// milliseconds and 80 random ones in Crockford's base32.
func requestID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16|rand.Uint64()&0xffff)
	binary.BigEndian.PutUint64(b[8:], rand.Uint64())
	return crockford.EncodeToString(b[:])
}

var crockford = base32.NewEncoding("0123456789ABCDEFGHJKMNPQRSTVWXYZ").WithPadding(base32.NoPadding)

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "sqlitefloor:", err)
		os.Exit(1)
	}
}
