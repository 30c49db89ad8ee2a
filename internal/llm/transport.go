package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxInFlight bounds the concurrent requests of one Candidates call.
const maxInFlight = 4

// maxResponseBytes bounds how much of a response body is read.
const maxResponseBytes = 8 << 20

// retry runs attempt until it succeeds, fails for good, or the retries run
// out. Each attempt gets its own timeout. An attempt's *ProviderError with a
// 429 or 5xx status is retried after the provider's Retry-After, or after an
// exponential backoff with jitter; the caller's cancellation ends the wait at
// once. The returned error is always a *ProviderError.
func (s settings) retry(ctx context.Context, op string, attempt func(ctx context.Context) error) error {
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return s.stopped(op, n-1, err)
		}
		actx, cancel := context.WithTimeout(ctx, s.timeout)
		err := attempt(actx)
		timedOut := actx.Err() == context.DeadlineExceeded
		cancel()
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return s.stopped(op, n, cerr)
		}
		var pe *ProviderError
		if !errors.As(err, &pe) {
			pe = &ProviderError{Err: err}
		}
		pe.Provider, pe.Op, pe.Attempts = s.provider, op, n
		if timedOut && pe.StatusCode == 0 {
			pe.Err = context.DeadlineExceeded
			return pe
		}
		if !pe.Retryable() || n > s.maxRetries {
			return pe
		}
		wait := s.backoff(n)
		if pe.RetryAfter > 0 {
			if pe.RetryAfter > s.maxRetryAfter {
				return pe
			}
			wait = pe.RetryAfter
		}
		s.logger.LogAttrs(ctx, slog.LevelInfo, "llm provider busy, retrying",
			slog.String("provider", s.provider),
			slog.String("op", op),
			slog.Int("status", pe.StatusCode),
			slog.String("type", pe.Type),
			slog.String("provider_request_id", pe.RequestID),
			slog.Int("attempt", n),
			slog.Duration("wait", wait),
		)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return s.stopped(op, n, ctx.Err())
		case <-t.C:
		}
	}
}

func (s settings) stopped(op string, attempts int, cause error) *ProviderError {
	return &ProviderError{Provider: s.provider, Op: op, Attempts: attempts, Err: cause}
}

// backoff is the wait before retry n (1-based): base·2^(n-1), capped, with
// jitter over its upper half.
func (s settings) backoff(n int) time.Duration {
	d := s.backoffBase
	for i := 1; i < n && d < s.backoffMax; i++ {
		d *= 2
	}
	d = min(d, s.backoffMax)
	half := d / 2
	return half + rand.N(half+1)
}

// parseRetryAfter reads the wait a response asks for: the retry-after-ms
// header (milliseconds, sent by OpenAI), else Retry-After in seconds or as an
// HTTP date. It returns 0 when there is none.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// httpJSON is what the HTTP adapters share: it posts JSON and reads JSON.
type httpJSON struct {
	settings
	client  *http.Client
	key     string // never formatted: see scrub
	headers func(h http.Header)
	// errorBody extracts the provider's error type and message from an
	// error response body.
	errorBody func(body []byte) (typ, msg string)
	// requestIDHeaders lists the headers carrying the provider's request id.
	requestIDHeaders []string
	// errorType, when set, reads the error type from an error response's
	// headers (Bedrock's X-Amzn-Errortype); it wins over the body's.
	errorType func(h http.Header) string
	// sign, when set, authenticates each attempt's request (Bedrock's
	// SigV4 over the payload); its *ProviderError is the attempt's.
	sign func(req *http.Request, payload []byte) error
}

// post sends body to url with retries and returns the raw 2xx response body.
func (c *httpJSON) post(ctx context.Context, op, url string, body any) ([]byte, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	var out []byte
	err = c.retry(ctx, op, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		if err != nil {
			return &ProviderError{Err: c.scrubErr(err)}
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		c.headers(req.Header)
		if c.sign != nil {
			if err := c.sign(req, payload); err != nil {
				if pe, ok := err.(*ProviderError); ok {
					pe.Message = c.scrub(pe.Message)
					return pe
				}
				return &ProviderError{Err: c.scrubErr(err)}
			}
		}
		resp, err := c.client.Do(req)
		if err != nil {
			return &ProviderError{Err: c.scrubErr(err)}
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		if err != nil {
			return &ProviderError{StatusCode: 0, Err: c.scrubErr(err)}
		}
		if resp.StatusCode/100 == 2 {
			out = data
			return nil
		}
		pe := &ProviderError{
			StatusCode: resp.StatusCode,
			RetryAfter: parseRetryAfter(resp.Header, time.Now()),
		}
		for _, h := range c.requestIDHeaders {
			if v := resp.Header.Get(h); v != "" {
				pe.RequestID = v
				break
			}
		}
		typ, msg := c.errorBody(data)
		if c.errorType != nil {
			if h := c.errorType(resp.Header); h != "" {
				typ = h
			}
		}
		if typ == "" && msg == "" {
			msg = snippet(string(data))
		}
		pe.Type, pe.Message = c.scrub(typ), c.scrub(msg)
		return pe
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scrub removes the API key from text that may echo it.
func (c *httpJSON) scrub(s string) string { return scrubKey(s, c.key) }

func (c *httpJSON) scrubErr(err error) error { return scrubKeyErr(err, c.key) }

func scrubKey(s, key string) string {
	if key == "" || !strings.Contains(s, key) {
		return s
	}
	return strings.ReplaceAll(s, key, redacted)
}

// scrubKeyErr keeps err (and what errors.Is sees through it) unless its text
// holds the key; then only the scrubbed text and a timeout/cancel cause are
// kept.
func scrubKeyErr(err error, key string) error {
	if err == nil || key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	clean := errors.New(scrubKey(err.Error(), key))
	for _, cause := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, cause) {
			return errors.Join(clean, cause)
		}
	}
	return clean
}

// fanOut runs one(i) for i in [0, n) with at most maxInFlight in flight and
// returns the results in order. The first error cancels the others and is
// returned.
func (s settings) fanOut(ctx context.Context, n int, one func(ctx context.Context, i int) (string, error)) ([]string, error) {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]string, n)
	sem := make(chan struct{}, maxInFlight)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			s, err := one(ctx, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				return
			}
			out[i] = s
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := parent.Err(); err != nil {
		return nil, s.stopped(opCandidates, 0, err)
	}
	return out, nil
}

func checkCandidateArgs(prompt string, n int, temperature float64) error {
	switch {
	case strings.TrimSpace(prompt) == "":
		return invalidArgument("empty prompt")
	case n < 1:
		return invalidArgument("n = %d, want at least 1", n)
	case temperature < 0:
		return invalidArgument("temperature %g, want 0 or more", temperature)
	}
	return nil
}

// apiURL is a provider's endpoint: path under the base URL's /v1, which
// a base URL may already end with (https://api.openai.com/v1 or
// http://localhost:11434).
func apiURL(baseURL, path string) string {
	base := strings.TrimRight(baseURL, "/")
	if strings.HasSuffix(base, "/v1") {
		return base + path
	}
	return base + "/v1" + path
}

// clientOf is the configured HTTP client, or a default one.
func clientOf(cfg Config) *http.Client {
	if cfg.HTTPClient != nil {
		return cfg.HTTPClient
	}
	return &http.Client{}
}
