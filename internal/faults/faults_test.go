package faults_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/faults"
)

func upstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func post(t *testing.T, client *http.Client, url, target string) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/", bytes.NewReader([]byte(`{"TableName":"t"}`)))
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	return client.Do(req)
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "connection reset")
}

// Each fault does what its name says, through the RoundTripper and
// through the proxy: error answers never reach the server and carry the
// status and __type the SDKs expect; latency and lost responses do reach
// it; resets look like resets.
func TestEachFaultKind(t *testing.T) {
	cases := []struct {
		kind    faults.Kind
		status  int
		typ     string
		reaches bool
		reset   bool
	}{
		{faults.InternalError, 500, "#InternalServerError", false, false},
		{faults.Unavailable, 503, "#ServiceUnavailableException", false, false},
		{faults.ThroughputExceeded, 400, "#ProvisionedThroughputExceededException", false, false},
		{faults.Throttling, 400, "#ThrottlingException", false, false},
		{faults.Latency, 200, "", true, false},
		{faults.ResetBefore, 0, "", false, true},
		{faults.LostResponse, 0, "", true, true},
	}
	for _, via := range []string{"transport", "proxy"} {
		for _, tc := range cases {
			t.Run(via+"/"+string(tc.kind), func(t *testing.T) {
				srv, hits := upstream(t)
				ft := faults.New(nil, 1, faults.Rule{Kind: tc.kind, Rate: 1, Delay: 30 * time.Millisecond})
				client, url := &http.Client{Transport: ft}, srv.URL
				if via == "proxy" {
					p, err := faults.NewProxy(srv.URL, ft)
					if err != nil {
						t.Fatal(err)
					}
					defer p.Close()
					client, url = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, p.URL()
				}
				start := time.Now()
				resp, err := post(t, client, url, "DynamoDB_20120810.TransactWriteItems")
				if tc.reset {
					if err == nil || !isReset(err) {
						t.Fatalf("want a connection reset, got %v %v", resp, err)
					}
				} else {
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.typ) {
						t.Fatalf("status %d body %s, want %d with %s", resp.StatusCode, body, tc.status, tc.typ)
					}
				}
				if got := hits.Load() == 1; got != tc.reaches {
					t.Fatalf("reached the server: %v, want %v", got, tc.reaches)
				}
				if tc.kind == faults.Latency && time.Since(start) < time.Millisecond {
					t.Fatalf("no latency added")
				}
				if ft.Counts()[tc.kind] != 1 {
					t.Fatalf("counts %v", ft.Counts())
				}
			})
		}
	}
}

func TestRulesMatchOperationsAndRates(t *testing.T) {
	srv, hits := upstream(t)
	ft := faults.New(nil, 7, faults.Rule{Kind: faults.InternalError, Rate: 0.5, Ops: []string{"PutItem"}})
	client := &http.Client{Transport: ft}
	for i := 0; i < 400; i++ {
		for _, target := range []string{"DynamoDB_20120810.PutItem", "DynamoDB_20120810.GetItem"} {
			resp, err := post(t, client, srv.URL, target)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	n := ft.Counts()[faults.InternalError]
	if n < 150 || n > 250 || ft.CountsByOperation()["500-internal-server-error GetItem"] != 0 {
		t.Fatalf("rate 0.5 on PutItem only gave %d faults (%v)", n, ft.CountsByOperation())
	}
	if hits.Load() != 800-n {
		t.Fatalf("%d requests reached the server, want %d", hits.Load(), 800-n)
	}
	ft.Enable(false)
	resp, err := post(t, client, srv.URL, "DynamoDB_20120810.PutItem")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("disabled transport still injects: %v %v", resp, err)
	}
}

func TestProxyForwardsOnlyToLoopback(t *testing.T) {
	if _, err := faults.NewProxy("http://192.0.2.1:8000", faults.New(nil, 1)); err == nil {
		t.Fatal("a proxy to a non-loopback address was started")
	}
}
