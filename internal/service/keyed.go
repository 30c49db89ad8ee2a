package service

import (
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/store"
)

// putKeyed writes a call whose whole write is one new record (a hook, a
// token, a held call) together with its Idempotency-Key's response:
// result as the transport will send it (prepareKey), in one transaction
// of the store (keyed, store.KeyedPuts), so that a crash leaves the
// record with its response or neither (docs/proof.md, "Idempotency
// across crashes"). Without a key, or on a store that keeps no keyed
// puts (keyed nil), plain writes the record alone and the transport
// remembers the response after it.
func (s *core) putKeyed(key *idempotency.Pending, result any, plain func() error, keyed func(*idempotency.Put) error) error {
	put := s.prepareKey(key, result, nil)
	if put == nil || keyed == nil {
		return plain()
	}
	err := keyed(put)
	key.Committed(put, err)
	return err
}

// prepareKey is the Put of result's response for key (nil: none), up to
// the size this store commits with a write (idempotency.BodyLimit); every
// keyed commit prepares its response here, so they all keep one limit.
func (s *core) prepareKey(key *idempotency.Pending, result any, warns []envelope.Warning) *idempotency.Put {
	return key.Prepare(result, warns, idempotency.BodyLimit(s.Store))
}

// keyedPuts is st's store.KeyedPuts, or nil.
func keyedPuts(st any) store.KeyedPuts {
	k, _ := st.(store.KeyedPuts)
	return k
}
