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
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
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
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("refusing to listen on %s: the stand-in is for the loopback interface only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: New(region, account), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
