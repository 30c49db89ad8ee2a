// Package client is the HTTP client of dont's API: the remote CLI uses it
// to send every verb to a server and print the envelope it gets back.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
)

// Client calls one endpoint with one token.
type Client struct {
	Endpoint string // e.g. http://127.0.0.1:8787
	Token    string
	HTTP     *http.Client
	// Header is added to every request (capabilities, confirmations).
	Header http.Header
	// Attempts bounds retries of transport failures and 5xx (default 3).
	Attempts int
}

// Unreachable is the code for a server that cannot be reached.
const Unreachable = errs.EndpointUnreachable

// Call posts a tool call and returns the server's envelope. Retries reuse
// one Idempotency-Key, so a retried call is applied at most once.
func (c *Client) Call(ctx context.Context, tool string, args map[string]any) (envelope.Envelope, error) {
	if args == nil { // "args" is an object: null is refused
		args = map[string]any{}
	}
	body, err := json.Marshal(map[string]any{"args": args})
	if err != nil {
		return envelope.Envelope{}, errs.E(errs.InvalidArgument, "cannot encode the arguments").Wrap(err)
	}
	return c.do(ctx, http.MethodPost, "/v1/tools/"+tool, body)
}

// Get fetches a read-only route such as /v1/tools.
func (c *Client) Get(ctx context.Context, path string) (envelope.Envelope, error) {
	return c.do(ctx, http.MethodGet, path, nil)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte) (envelope.Envelope, error) {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	attempts := c.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	key := ids.New(ids.Request, time.Now())
	var lastErr error
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(time.Duration(100<<attempt) * time.Millisecond):
			case <-ctx.Done():
				return envelope.Envelope{}, errs.E(errs.Interrupted, "interrupted").Wrap(ctx.Err())
			}
		}
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Endpoint, "/")+path, bytes.NewReader(body))
		if err != nil {
			return envelope.Envelope{}, errs.E(errs.ConfigInvalid, "bad endpoint "+c.Endpoint).Wrap(err)
		}
		for k, v := range c.Header {
			req.Header[k] = v
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", key)
		}
		if c.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return envelope.Envelope{}, errs.E(errs.Interrupted, "interrupted").Wrap(ctx.Err())
			}
			lastErr = err
			continue
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			lastErr = err
			continue
		}
		var env envelope.Envelope
		if err := json.Unmarshal(raw, &env); err != nil || env.EnvelopeVersion == "" {
			lastErr = errors.New(resp.Status + ": not an envelope")
			if resp.StatusCode >= 500 {
				continue
			}
			return envelope.Envelope{}, errs.E(Unreachable, c.Endpoint+" answered "+resp.Status+" without an envelope").Wrap(err)
		}
		if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable && attempt < attempts-1 {
			lastErr = errors.New(resp.Status)
			continue
		}
		return env, nil
	}
	return envelope.Envelope{}, errs.E(Unreachable, "cannot reach "+c.Endpoint+": "+lastErr.Error()).Wrap(lastErr)
}
