package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// debugServer serves pprof profiles on DONT_DEBUG_ADDR (loopback only)
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
	// The mutex and block profiles record only once a rate is set: about
	// one contention event in 10, and blocking sampled every 100 µs.
	runtime.SetMutexProfileFraction(10)
	runtime.SetBlockProfileRate(int(100 * time.Microsecond))
	srv := &http.Server{Handler: http.HandlerFunc(servePprof), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	a.stderr.Write([]byte(`{"debug":"http://` + ln.Addr().String() + `/debug/pprof/"}` + "\n"))
}

// servePprof answers /debug/pprof/ (the profiles' names), /debug/pprof/<name>
// (a runtime/pprof profile, ?debug=N for text) and /debug/pprof/profile (a
// CPU profile, ?seconds=N, 30 by default). It is net/http/pprof's surface
// that soaks use, written against runtime/pprof: importing net/http/pprof
// registers its handlers on http.DefaultServeMux at init, which cost every
// CLI start 0.1 ms for a listener only `dont serve` may open.
func servePprof(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/debug/pprof/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	switch name {
	case "":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for _, p := range pprof.Profiles() {
			fmt.Fprintf(w, "%d\t%s\n", p.Count(), p.Name())
		}
		fmt.Fprintln(w, "-\tprofile")
	case "profile":
		secs, err := strconv.Atoi(r.URL.Query().Get("seconds"))
		if err != nil || secs <= 0 {
			secs = 30
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		if err := pprof.StartCPUProfile(w); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		select {
		case <-time.After(time.Duration(secs) * time.Second):
		case <-r.Context().Done():
		}
		pprof.StopCPUProfile()
	default:
		p := pprof.Lookup(name)
		if p == nil {
			http.NotFound(w, r)
			return
		}
		debug, _ := strconv.Atoi(r.URL.Query().Get("debug"))
		if debug > 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		_ = p.WriteTo(w, debug)
	}
}
