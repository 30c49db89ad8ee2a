package faults

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Proxy is a reverse proxy on 127.0.0.1 that forwards to an upstream
// endpoint through a Transport. A reset fault is a real TCP reset of the
// client's connection (SO_LINGER 0), so a process that only takes an
// endpoint URL — `dont serve`, a Lambda function under test — meets the
// same faults as an in-process client.
type Proxy struct {
	Transport *Transport
	upstream  *url.URL
	srv       *http.Server
	ln        net.Listener
	done      chan struct{}
}

// NewProxy starts a proxy to upstream (an http:// URL on loopback).
func NewProxy(upstream string, t *Transport) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	if host := u.Hostname(); host != "localhost" && !net.ParseIP(host).IsLoopback() {
		return nil, errors.New("faults: the proxy only forwards to loopback addresses, not " + host)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Transport: t, upstream: u, ln: ln, done: make(chan struct{})}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(p.done)
		p.srv.Serve(ln)
	}()
	return p, nil
}

// URL is the proxy's endpoint.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops the proxy.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	<-p.done
	return err
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.URL.Path = strings.TrimSuffix(p.upstream.Path, "/") + r.URL.Path
	out.Host = p.upstream.Host
	resp, err := p.Transport.RoundTrip(out)
	if err != nil {
		reset(w)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// reset drops the client's connection with a TCP RST.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}
