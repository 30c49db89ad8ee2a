// Package webhook is the HTTP client that delivers hook messages: signed
// with the Standard Webhooks headers, 5 s per attempt, no redirects
// followed, the response body read up to a cap, and every address it
// dials checked against the hook address policy at dial time
// (net.Dialer.Control), so a name that resolves — or re-resolves — to a
// private address is refused whatever it said when the hook was added.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/service"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Client delivers one attempt at a time.
type Client struct {
	HTTP   *http.Client
	Policy hooks.AddrPolicy
}

// ErrRefusedAddress is the dial-time refusal of a private address.
var ErrRefusedAddress = errors.New("webhook: refused address")

// New builds a client under policy.
func New(policy hooks.AddrPolicy) *Client {
	d := &net.Dialer{Timeout: hooks.AttemptTimeout, Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrRefusedAddress, address)
		}
		if err := policy.Check(ap.Addr()); err != nil {
			return fmt.Errorf("%w: %s", ErrRefusedAddress, ap.Addr())
		}
		return nil
	}}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the policy
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   hooks.AttemptTimeout,
		ResponseHeaderTimeout: hooks.AttemptTimeout,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &Client{Policy: policy, HTTP: &http.Client{
		Transport:     tr,
		Timeout:       hooks.AttemptTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Send posts body to url with the Standard Webhooks headers for id at ts.
func (c *Client) Send(ctx context.Context, url, secret, id string, ts time.Time, body []byte) service.SendResult {
	// Signed by the Standard Webhooks library itself, so that receivers
	// using any of its implementations verify what we send.
	signer, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return service.SendResult{Err: fmt.Errorf("webhook: the signing secret is not whsec_<base64>: %w", err), Refused: true}
	}
	sig, err := signer.Sign(id, ts, body)
	if err != nil {
		return service.SendResult{Err: err, Refused: true}
	}
	ctx, cancel := context.WithTimeout(ctx, hooks.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return service.SendResult{Err: err, Refused: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "dont-webhooks/1")
	req.Header.Set(standardwebhooks.HeaderWebhookID, id)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	start := time.Now()
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return service.SendResult{Latency: time.Since(start), Err: err, Refused: errors.Is(err, ErrRefusedAddress)}
	}
	defer resp.Body.Close()
	// The body is read up to a cap (a receiver cannot make us read more),
	// and not kept: the status decides.
	io.Copy(io.Discard, io.LimitReader(resp.Body, hooks.MaxResponseBody)) //nolint:errcheck // best effort
	r := service.SendResult{Status: resp.StatusCode, Latency: time.Since(start)}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			r.RetryAfter = time.Duration(n) * time.Second
		}
	}
	return r
}
