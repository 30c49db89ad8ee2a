package storetest

import (
	"context"
	"sync"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/store"
)

// Rendezvous returns s with its first n ListEntities calls held until all
// n have read: n callers that list before they commit (as a define checks
// its CURIE) have all read before any of them commits — the interleaving
// in which only the store's own conditions keep them apart. Later calls
// are not held. A held call gives up when its context ends.
func Rendezvous(s store.Store, n int) store.Store {
	return &rendezvous{Store: s, n: n, met: make(chan struct{})}
}

type rendezvous struct {
	store.Store
	mu      sync.Mutex
	n, seen int
	met     chan struct{}
}

func (r *rendezvous) ListEntities(ctx context.Context, f store.EntityFilter) ([]ledger.Entity, error) {
	out, err := r.Store.ListEntities(ctx, f)
	r.mu.Lock()
	r.seen++
	held := r.seen <= r.n
	if r.seen == r.n {
		close(r.met)
	}
	r.mu.Unlock()
	if held {
		select {
		case <-r.met:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, err
}
