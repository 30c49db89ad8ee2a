// Package idempotency holds the port through which the HTTP API remembers
// the first response to each Idempotency-Key, so that every store (SQLite,
// DynamoDB) implements it without depending on the transport.
package idempotency

import (
	"context"
	"time"
)

// Store keeps the first response to each Idempotency-Key.
type Store interface {
	// Claim reserves key for a request whose body hashes to fingerprint. If
	// the key is already known it returns the stored record instead.
	Claim(ctx context.Context, key, fingerprint string, now time.Time) (existing *Record, err error)
	// Complete stores the response of the claimed key.
	Complete(ctx context.Context, key string, status int, body []byte) error
	// Release forgets a claimed key whose request did not finish.
	Release(ctx context.Context, key string) error
	// Lookup returns the finished record of key, or nil: for calls that
	// need no claim, because the service applies them at most once by its
	// own conditions (see internal/httpapi). It may read a replica.
	Lookup(ctx context.Context, key string, now time.Time) (*Record, error)
	// Remember stores the response of an unclaimed key unless a response
	// is stored already: the first to finish is remembered.
	Remember(ctx context.Context, key, fingerprint string, status int, body []byte, now time.Time) error
}

// Record is a remembered request.
type Record struct {
	Fingerprint string
	Done        bool
	Status      int
	Body        []byte
}
