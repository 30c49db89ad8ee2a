package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testKey is the API key every test configures. Leak tests look for it.
const testKey = "sk-test-Q9xV2mLr8TzK4pWn6HbJ0cYa"

// seen is one request as the fake provider received it.
type seen struct {
	Method string
	Path   string // escaped path
	Header http.Header
	Body   []byte
	At     time.Time
}

// decode unmarshals the request body into a generic map.
func (s seen) decode(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(s.Body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, s.Body)
	}
	return m
}

// fakeProvider is a local HTTP server that records each request and answers
// with handler, which gets the 0-based index of the request.
type fakeProvider struct {
	*httptest.Server
	mu          sync.Mutex
	reqs        []seen
	inFlight    atomic.Int32
	maxInFlight atomic.Int32
}

func newFakeProvider(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, i int)) *fakeProvider {
	t.Helper()
	f := newUnstartedFakeProvider(handler)
	f.Start()
	t.Cleanup(f.Close)
	return f
}

// newFakeTLSProvider serves HTTPS; its Client() trusts the test certificate.
func newFakeTLSProvider(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, i int)) *fakeProvider {
	t.Helper()
	f := newUnstartedFakeProvider(handler)
	f.StartTLS()
	t.Cleanup(f.Close)
	return f
}

func newUnstartedFakeProvider(handler func(w http.ResponseWriter, r *http.Request, i int)) *fakeProvider {
	f := &fakeProvider{}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := f.inFlight.Add(1)
		defer f.inFlight.Add(-1)
		for {
			m := f.maxInFlight.Load()
			if cur <= m || f.maxInFlight.CompareAndSwap(m, cur) {
				break
			}
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		i := len(f.reqs)
		f.reqs = append(f.reqs, seen{Method: r.Method, Path: r.URL.EscapedPath(), Header: r.Header.Clone(), Body: body, At: time.Now()})
		f.mu.Unlock()
		handler(w, r, i)
	}))
	return f
}

func (f *fakeProvider) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

// fixture reads testdata/<name>, with {{API_KEY}} replaced by testKey.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(b, []byte("{{API_KEY}}"), []byte(testKey))
}

// respond writes a JSON fixture with status and extra header pairs.
func respond(t *testing.T, w http.ResponseWriter, status int, name string, headers ...string) {
	t.Helper()
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(fixture(t, name))
}

// blockUntilGone holds a request open until the client goes away (or 10 s).
func blockUntilGone(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// newTestProvider builds a provider through New and shortens its backoff so
// that tests of retries without Retry-After run fast.
func newTestProvider(t *testing.T, cfg Config) Provider {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%v): %v", cfg, err)
	}
	s := settingsOf(p)
	s.backoffBase = time.Millisecond
	s.backoffMax = 4 * time.Millisecond
	return p
}

func settingsOf(p Provider) *settings {
	switch p := p.(type) {
	case *openAI:
		return &p.http.settings
	case *anthropic:
		return &p.http.settings
	case *bedrock:
		return &p.http.settings
	}
	panic("unknown provider type")
}

// mustContain fails unless raw contains each fragment verbatim.
func mustContain(t *testing.T, raw []byte, fragments ...string) {
	t.Helper()
	for _, f := range fragments {
		if !strings.Contains(string(raw), f) {
			t.Errorf("request body lacks %s:\n%s", f, raw)
		}
	}
}

// jsonEqual compares two values by their JSON encoding.
func jsonEqual(t *testing.T, got, want any) bool {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var gv, wv any
	_ = json.Unmarshal(g, &gv)
	_ = json.Unmarshal(w, &wv)
	g, _ = json.Marshal(gv)
	w, _ = json.Marshal(wv)
	return bytes.Equal(g, w)
}
