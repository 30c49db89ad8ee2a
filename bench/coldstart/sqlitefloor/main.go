// Command sqlitefloor is the cold-start floor of any CLI that keeps its
// state in SQLite through the pure-Go driver: open the file and run the two
// queries `dont show` runs (the due-spawn sweep probe and one entity read).
// bench/coldstart times it beside dont and a hello-world.
package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "modernc.org/sqlite"
)

func main() {
	db, err := sql.Open("sqlite", "file:"+os.Args[1]+"?_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	var doc, req []byte
	err = db.QueryRow("SELECT doc, request FROM spawns INDEXED BY spawns_due WHERE state = 'pending' AND expires_at <= '2099' LIMIT 100").Scan(&doc, &req)
	if err != nil && err != sql.ErrNoRows {
		panic(err)
	}
	if err := db.QueryRow("SELECT doc FROM entities WHERE id = ?", os.Args[2]).Scan(&doc); err != nil {
		panic(err)
	}
	fmt.Println(string(doc))
}
