package runner

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/dont-cli/dont/internal/auth"
)

// CallCounter counts the requests made with each running agent's callback
// token on the API the runner serves its agents (embedded mode): one of
// the two signs of progress that earn an agent a heartbeat (the other is
// output). Only the tokens of agents now running are counted, so a flood
// of made-up tokens grows nothing.
type CallCounter struct {
	mu    sync.Mutex
	calls map[string]uint64
}

// Handler counts each request to next under its bearer token, whatever
// next answers: a refused call is still the agent at work.
func (c *CallCounter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := auth.FromAuthorization(r.Header.Get("Authorization")); tok != "" {
			c.mu.Lock()
			if n, ok := c.calls[tok]; ok {
				c.calls[tok] = n + 1
			}
			c.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (c *CallCounter) track(tok string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]uint64{}
	}
	c.calls[tok] = 0
}

func (c *CallCounter) forget(tok string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.calls, tok)
}

func (c *CallCounter) count(tok string) uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[tok]
}

// progress is one agent's signs of life: bytes of output, and calls on
// its callback token.
type progress struct {
	written atomic.Uint64
	calls   *CallCounter
	token   string
}

func (p *progress) mark() uint64 { return p.written.Load() + p.calls.count(p.token) }

// copyOutput copies the agent's output to w, counting it, until the
// agent's end of the pipe is closed by every process that holds it.
func (p *progress) copyOutput(w io.Writer, r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.written.Add(uint64(n))
			_, _ = w.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}
