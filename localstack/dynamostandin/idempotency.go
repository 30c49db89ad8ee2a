package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"time"
)

// DynamoDB makes TransactWriteItems idempotent by ClientRequestToken: for
// 10 minutes after a request with a token succeeded, a request with the
// same token and the same parameters succeeds again without writing, and
// one with other parameters fails with IdempotentParameterMismatchException.
// This is what makes retrying a transaction whose response was lost safe.
// minidyn v0.8.2 ignores the token, so a retried resolution would fail its
// own condition; the stand-in remembers successful tokens itself.

// tokenWindow is how long DynamoDB keeps a ClientRequestToken.
const tokenWindow = 10 * time.Minute

type tokenRecord struct {
	digest [32]byte
	at     time.Time
}

// transactToken returns the request's ClientRequestToken and a digest of
// its other parameters (ReturnConsumedCapacity only shapes the answer).
func transactToken(body []byte) (string, [32]byte) {
	var in map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&in) != nil {
		return "", [32]byte{}
	}
	token, _ := in["ClientRequestToken"].(string)
	delete(in, "ClientRequestToken")
	delete(in, "ReturnConsumedCapacity")
	// Clients send map members in any order; Marshal sorts them at every level.
	canonical, _ := json.Marshal(in)
	return token, sha256.Sum256(canonical)
}

// replayToken answers a request whose token already succeeded, or nil.
func (s *Standin) replayToken(token string, digest [32]byte, now time.Time) *response {
	for t, r := range s.tokens {
		if now.Sub(r.at) > tokenWindow {
			delete(s.tokens, t)
		}
	}
	r, ok := s.tokens[token]
	if !ok {
		return nil
	}
	if r.digest != digest {
		return errorResponse(&apiError{status: http.StatusBadRequest, code: "IdempotentParameterMismatchException",
			msg: "The request uses the same client token as a previous, but non-identical request"})
	}
	return jsonResponse(map[string]any{})
}

func (s *Standin) rememberToken(token string, digest [32]byte, now time.Time) {
	s.tokens[token] = tokenRecord{digest: digest, at: now}
}
