package llm

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 4, 25, 17, 0, 0, 0, time.UTC)
	cases := []struct {
		header, value string
		want          time.Duration
	}{
		{"Retry-After", "2", 2 * time.Second},
		{"Retry-After", "0.5", 500 * time.Millisecond},
		{"Retry-After", "Fri, 25 Apr 2025 17:00:07 GMT", 7 * time.Second},
		{"Retry-After", "Fri, 25 Apr 2025 16:59:00 GMT", 0},
		{"Retry-After", "0", 0},
		{"Retry-After", "-3", 0},
		{"Retry-After", "soon", 0},
		{"Retry-After-Ms", "120", 120 * time.Millisecond},
		{"X-Other", "5", 0},
	}
	for _, c := range cases {
		h := http.Header{}
		h.Set(c.header, c.value)
		if got := parseRetryAfter(h, now); got != c.want {
			t.Errorf("%s: %s = %s, want %s", c.header, c.value, got, c.want)
		}
	}
}

func TestBackoffGrowsExponentiallyWithJitterAndCap(t *testing.T) {
	s := settings{backoffBase: 100 * time.Millisecond, backoffMax: time.Second}
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 5: time.Second, 30: time.Second} {
		for range 50 {
			d := s.backoff(n)
			if d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %s, want in [%s, %s]", n, d, want/2, want)
			}
		}
	}
}

func TestRetryOn429HonoursRetryAfter(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, i int) {
		if i == 0 {
			respond(t, w, 429, "openai/error_429.json", "Retry-After", "1", "X-Request-Id", "req_0f1e2d3c4b")
			return
		}
		respond(t, w, 200, "openai/judge_dismiss.json")
	})
	// Backoff is 1-4 ms here, so only Retry-After can explain a 1 s gap.
	if _, err := newTestProvider(t, openAIConfig(srv.URL)).Judge(context.Background(), judgePrompt); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if gap := reqs[1].At.Sub(reqs[0].At); gap < 950*time.Millisecond {
		t.Errorf("retried after %s, want Retry-After's 1s", gap)
	}
}

func TestRetryAfterHTTPDateIsHonoured(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, i int) {
		if i == 0 {
			at := time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
			respond(t, w, 503, "openai/error_503.json", "Retry-After", at)
			return
		}
		respond(t, w, 200, "openai/judge_dismiss.json")
	})
	if _, err := newTestProvider(t, openAIConfig(srv.URL)).Judge(context.Background(), judgePrompt); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	// HTTP dates have 1 s resolution: the wait is between 1 and 2 s.
	if gap := reqs[1].At.Sub(reqs[0].At); gap < 900*time.Millisecond {
		t.Errorf("retried after %s, want the HTTP date honoured", gap)
	}
}

func TestRetryOn503ThenSucceeds(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, i int) {
		if i < 2 {
			respond(t, w, 503, "openai/error_503.json")
			return
		}
		respond(t, w, 200, "openai/judge_dismiss.json")
	})
	v, err := newTestProvider(t, openAIConfig(srv.URL)).Judge(context.Background(), judgePrompt)
	if err != nil {
		t.Fatal(err)
	}
	if v.Action != ActionDismiss {
		t.Errorf("verdict = %+v", v)
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestGiveUpAfterMaxRetries(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 503, "openai/error_503.json", "X-Request-Id", "req_9a8b7c6d5e")
	})
	cfg := openAIConfig(srv.URL)
	cfg.MaxRetries = 2
	_, err := newTestProvider(t, cfg).Judge(context.Background(), judgePrompt)
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (1 + MaxRetries)", n)
	}
	var pe *ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("Judge = %v, want *ProviderError", err)
	}
	if pe.StatusCode != 503 || pe.Attempts != 3 || pe.Type != "server_error" || pe.Message != "The server is overloaded or not ready yet." || pe.RequestID != "req_9a8b7c6d5e" || pe.Op != "judge" || pe.Provider != "openai" {
		t.Errorf("error = %+v", *pe)
	}
	if !errors.Is(err, ErrProvider) || errors.Is(err, ErrRateLimited) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnusableVerdict) {
		t.Errorf("%v matches the wrong sentinels", err)
	}
}

func TestMaxRetriesNegativeMeansOneAttempt(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 503, "openai/error_503.json")
	})
	cfg := openAIConfig(srv.URL)
	cfg.MaxRetries = -1
	if _, err := newTestProvider(t, cfg).Judge(context.Background(), judgePrompt); !errors.Is(err, ErrProvider) {
		t.Fatalf("Judge = %v", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestRateLimitedAfterRetriesMatchesErrRateLimited(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 429, "openai/error_429.json")
	})
	cfg := openAIConfig(srv.URL)
	cfg.MaxRetries = 1
	_, err := newTestProvider(t, cfg).Candidates(context.Background(), guessPrompt, 3, 0.7)
	if !errors.Is(err, ErrRateLimited) || !errors.Is(err, ErrProvider) {
		t.Fatalf("Candidates = %v, want ErrRateLimited", err)
	}
	var pe *ProviderError
	if errors.As(err, &pe) && pe.Type != "rate_limit_exceeded" {
		t.Errorf("Type = %q, want the provider's code", pe.Type)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 422} {
		srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
			respond(t, w, status, "openai/error_401_echo.json")
		})
		_, err := newTestProvider(t, openAIConfig(srv.URL)).Judge(context.Background(), judgePrompt)
		var pe *ProviderError
		if !errors.As(err, &pe) || pe.StatusCode != status {
			t.Errorf("HTTP %d: Judge = %v", status, err)
		}
		if n := len(srv.requests()); n != 1 {
			t.Errorf("HTTP %d: %d requests, want 1", status, n)
		}
	}
}

func TestRetryAfterBeyondLimitGivesUpAtOnce(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 429, "openai/error_429.json", "Retry-After", "3600")
	})
	start := time.Now()
	_, err := newTestProvider(t, openAIConfig(srv.URL)).Judge(context.Background(), judgePrompt)
	if time.Since(start) > 2*time.Second {
		t.Errorf("waited %s for a one-hour Retry-After", time.Since(start))
	}
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.RetryAfter != time.Hour || !errors.Is(err, ErrRateLimited) {
		t.Fatalf("Judge = %v, want ErrRateLimited carrying RetryAfter 1h", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestPerRequestTimeout(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		blockUntilGone(r)
	})
	cfg := openAIConfig(srv.URL)
	cfg.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err := newTestProvider(t, cfg).Judge(context.Background(), judgePrompt)
	elapsed := time.Since(start)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrProvider) {
		t.Fatalf("Judge = %v, want ErrTimeout", err)
	}
	if elapsed < 200*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("gave up after %s, want about the 200ms timeout", elapsed)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1: a timed-out request is not retried", n)
	}
}

func TestCancellationStopsWaitingImmediately(t *testing.T) {
	cases := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request, i int)
	}{
		{"during a request", func(w http.ResponseWriter, r *http.Request, _ int) { blockUntilGone(r) }},
		{"during a Retry-After wait", func(w http.ResponseWriter, r *http.Request, _ int) {
			respond(t, w, 429, "openai/error_429.json", "Retry-After", "30")
		}},
		{"during a backoff", func(w http.ResponseWriter, r *http.Request, _ int) {
			respond(t, w, 503, "openai/error_503.json")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newFakeProvider(t, c.handler)
			cfg := openAIConfig(srv.URL)
			cfg.Timeout = 30 * time.Second
			p := newTestProvider(t, cfg)
			s := settingsOf(p)
			s.backoffBase, s.backoffMax = 30*time.Second, 30*time.Second
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(150*time.Millisecond, cancel)
			start := time.Now()
			_, err := p.Judge(ctx, judgePrompt)
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("returned %s after the cancel", elapsed)
			}
			if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrProvider) || errors.Is(err, ErrTimeout) {
				t.Fatalf("Judge = %v, want a cancelled ErrProvider", err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

func TestCancellationStopsConcurrentCandidates(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) { blockUntilGone(r) })
	p := newTestProvider(t, anthropicConfig(srv.URL))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(150*time.Millisecond, cancel)
	start := time.Now()
	_, err := p.Candidates(ctx, guessPrompt, 10, 0.9)
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("returned %s after the cancel", elapsed)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrProvider) {
		t.Fatalf("Candidates = %v, want a cancelled ErrProvider", err)
	}
	if n := len(srv.requests()); n > maxInFlight {
		t.Errorf("%d requests started, want at most %d before the cancel", n, maxInFlight)
	}
}

func TestConnectionFailureIsAProviderError(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {})
	url := srv.URL
	srv.Close()
	_, err := newTestProvider(t, openAIConfig(url)).Judge(context.Background(), judgePrompt)
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 0 || pe.Err == nil || errors.Is(err, ErrTimeout) {
		t.Fatalf("Judge = %#v, want a *ProviderError with a network cause", err)
	}
}
