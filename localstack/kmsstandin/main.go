// Command kmsstandin serves a KMS-compatible API on the loopback interface
// for tests and CI runs that have no Docker: local-kms's engine
// (github.com/nsmithuk/local-kms, which LocalStack used for KMS) behind a
// loopback-only listener, with its data in a directory of this run's.
// Keys are made with CreateKey like on AWS. localstack/README.md lists how
// it differs from KMS.
//
// It prints "listening http://HOST:PORT" on stdout once it accepts
// connections, then serves until SIGINT or SIGTERM.
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
	"path/filepath"

	localkms "github.com/nsmithuk/local-kms/src"
	"github.com/nsmithuk/local-kms/src/config"
	"github.com/nsmithuk/local-kms/src/data"

	"github.com/dont-cli/dont/localstack/loopback"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	region := flag.String("region", "us-east-1", "region named in key ARNs")
	account := flag.String("account", "111122223333", "account named in key ARNs")
	dir := flag.String("data", "", "directory for the keys (default: a new temporary one)")
	flag.Parse()
	if err := run(*addr, *region, *account, *dir); err != nil {
		log.Fatalf("kmsstandin: %v", err)
	}
}

func run(addr, region, account, dir string) error {
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kmsstandin-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	config.AWSRegion, config.AWSAccountId = region, account
	if config.DatabasePath, err = filepath.Abs(filepath.Join(dir, "db")); err != nil {
		return err
	}
	db := data.NewDatabase(config.DatabasePath)
	defer db.Close()
	return loopback.Serve(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { localkms.HandleRequest(w, r, db) }))
}
