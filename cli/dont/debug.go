package main

import (
	"context"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// debugServer serves net/http/pprof on DONT_DEBUG_ADDR (loopback only)
// while `dont serve` runs, so soaks and profiles can read the goroutine
// count and heap of a live server. Unset, nothing listens.
func (a *app) debugServer(ctx context.Context) {
	addr := a.getenv("DONT_DEBUG_ADDR")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
		a.stderr.Write([]byte("DONT_DEBUG_ADDR must be a loopback host:port; the debug server is off\n"))
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		a.stderr.Write([]byte("debug server: " + err.Error() + "\n"))
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	a.stderr.Write([]byte(`{"debug":"http://` + ln.Addr().String() + `/debug/pprof/"}` + "\n"))
}
