// Command dynamostandin serves a DynamoDB-compatible API on the loopback
// interface for tests and CI runs that have no Docker: minidyn's in-memory
// engine, plus the CRC32 header, table statuses, TTL and ListTables answers,
// and the secondary-index queries that aws-sdk-go-v2 and dont's store need.
// localstack/README.md lists what it does not do. A query reads its
// partition, a Scan its page and a transaction its items, as DynamoDB
// does, not the whole table as minidyn does (README item 12).
//
// It prints "listening http://HOST:PORT" on stdout once it accepts
// connections, then serves until SIGINT or SIGTERM.
//
// The strict modes (strict.go: index lag, injected TransactionConflict and
// throttling) are off unless flags or the environment turn them on for
// every table: -gsi-lag-reads / DONT_STANDIN_GSI_LAG_READS, -gsi-lag /
// DONT_STANDIN_GSI_LAG, -conflict-rate / DONT_STANDIN_CONFLICT_RATE,
// -throttle-rate / DONT_STANDIN_THROTTLE_RATE, -seed / DONT_STANDIN_SEED.
package main

import (
	"flag"
	"log"
	"os"
	"strconv"
	"time"

	"github.com/dont-cli/dont/localstack/loopback"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	region := flag.String("region", "us-east-1", "region named in table ARNs")
	var o Options
	flag.IntVar(&o.GSILagReads, "gsi-lag-reads", envInt("DONT_STANDIN_GSI_LAG_READS"), "a write reaches a global index's queries after this many of them")
	flag.DurationVar(&o.GSILag, "gsi-lag", envDuration("DONT_STANDIN_GSI_LAG"), "... and after this long")
	flag.Float64Var(&o.ConflictRate, "conflict-rate", envFloat("DONT_STANDIN_CONFLICT_RATE"), "fraction of TransactWriteItems cancelled with TransactionConflict")
	flag.Float64Var(&o.ThrottleRate, "throttle-rate", envFloat("DONT_STANDIN_THROTTLE_RATE"), "fraction of item requests throttled")
	seed := flag.Uint64("seed", uint64(envInt("DONT_STANDIN_SEED")), "seed of the injected faults (0: random)")
	flag.Parse()
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	if o.GSILagReads < 0 || o.GSILag < 0 || o.ConflictRate < 0 || o.ConflictRate > 1 || o.ThrottleRate < 0 || o.ThrottleRate > 1 {
		log.Fatalf("dynamostandin: lags must not be negative, rates must be in [0, 1]")
	}
	if err := run(*addr, *region, o, *seed); err != nil {
		log.Fatalf("dynamostandin: %v", err)
	}
}

func envInt(name string) int {
	v, err := strconv.Atoi(os.Getenv(name))
	if err != nil && os.Getenv(name) != "" {
		log.Fatalf("dynamostandin: %s: %v", name, err)
	}
	return v
}

func envFloat(name string) float64 {
	v, err := strconv.ParseFloat(os.Getenv(name), 64)
	if err != nil && os.Getenv(name) != "" {
		log.Fatalf("dynamostandin: %s: %v", name, err)
	}
	return v
}

func envDuration(name string) time.Duration {
	if os.Getenv(name) == "" {
		return 0
	}
	v, err := time.ParseDuration(os.Getenv(name))
	if err != nil {
		log.Fatalf("dynamostandin: %s: %v", name, err)
	}
	return v
}

func run(addr, region string, o Options, seed uint64) error {
	if o != (Options{}) {
		log.Printf("strict modes for every table: gsi-lag-reads=%d gsi-lag=%s conflict-rate=%g throttle-rate=%g seed=%d",
			o.GSILagReads, o.GSILag, o.ConflictRate, o.ThrottleRate, seed)
	}
	return loopback.Serve(addr, NewStrict(region, o, seed))
}
