// Package llmtest runs local stand-ins for LLM providers in tests: HTTP
// servers on the loopback interface that speak a provider's wire format,
// answer with the recorded responses in internal/llm/testdata, and keep
// every request they were sent so that tests can assert on the wire.
package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Request is one request as the stand-in received it.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the body.
func (r Request) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, r.Body)
	}
	return m
}

// UserPrompt is the user message of an OpenAI chat completion or an
// Anthropic Messages request: what the model was asked.
func (r Request) UserPrompt(t testing.TB) string {
	t.Helper()
	msgs, _ := r.JSON(t)["messages"].([]any)
	for _, m := range msgs {
		if m, ok := m.(map[string]any); ok && m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	t.Fatalf("no user message in %s", r.Body)
	return ""
}

// Handler answers the i-th request (0-based) the server receives.
type Handler func(w http.ResponseWriter, r *http.Request, i int)

// Server is a provider stand-in.
type Server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []Request
}

// New starts a stand-in that answers with h; it stops when the test ends.
func New(t testing.TB, h Handler) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		i := len(s.reqs)
		s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		h(w, r, i)
	}))
	t.Cleanup(s.Close)
	return s
}

// Requests returns what the server has received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Dir is internal/llm/testdata.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata")
}

// Fixture reads a recorded response, such as "openai/judge_dismiss.json".
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Reply answers every request with status and the recorded response name,
// plus header pairs.
func Reply(t testing.TB, status int, name string, headers ...string) Handler {
	body := Fixture(t, name)
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

// Hang holds every request open until the client goes away (or a minute
// passes), as a provider that never answers.
func Hang(w http.ResponseWriter, r *http.Request, _ int) {
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
	}
}

// Refuse fails the test if the provider is called at all.
func Refuse(t testing.TB) Handler {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		t.Errorf("the provider was called (%s %s) where it must not be", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	}
}
