// Command eventbridgestandin serves the part of the Amazon EventBridge API
// that dont uses — PutEvents on the default bus — on the loopback
// interface, for tests and CI runs with no Docker and no account. It is at
// least as strict as the service where dont could get it wrong: 1 to 10
// entries per call, 256 KB per request (sized as EventBridge sizes
// entries), Source, DetailType and a JSON-object Detail required per
// entry, only the default bus (by name or ARN), and the service's error
// shapes (a ValidationException for the request, ErrorCode and
// ErrorMessage per failed entry). docs/aws.md lists what it does not do.
//
// GET /_standin/events returns every accepted entry as JSON, for tests.
//
// It prints "listening http://HOST:PORT" on stdout once it accepts
// connections, then serves until SIGINT or SIGTERM.
package main

import (
	"flag"
	"log"

	"github.com/dont-cli/dont/localstack/loopback"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	region := flag.String("region", "us-east-1", "region named in the default bus's ARN")
	account := flag.String("account", "000000000000", "account named in the default bus's ARN")
	flag.Parse()
	if err := run(*addr, *region, *account); err != nil {
		log.Fatalf("eventbridgestandin: %v", err)
	}
}

func run(addr, region, account string) error {
	return loopback.Serve(addr, New(region, account))
}
