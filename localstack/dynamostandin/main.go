// Command dynamostandin serves a DynamoDB-compatible API on the loopback
// interface for tests and CI runs that have no Docker: minidyn's in-memory
// engine, plus the CRC32 header, table statuses, TTL and ListTables answers,
// and the secondary-index queries that aws-sdk-go-v2 and dont's store need.
// localstack/README.md lists what it does not do.
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
	region := flag.String("region", "us-east-1", "region named in table ARNs")
	flag.Parse()
	if err := run(*addr, *region); err != nil {
		log.Fatalf("dynamostandin: %v", err)
	}
}

func run(addr, region string) error {
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
	srv := &http.Server{Handler: New(region), ReadHeaderTimeout: 10 * time.Second}
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
