// Package readmemo lets a store answer the repeated reads of one request
// from memory: authenticating, checking a callback's powers and applying
// it read the same few items. A request then sees each item as its first
// read found it, until the store's first write, after which (whether the
// write succeeded or not) it reads again. Conditional writes keep that
// safe: a write based on a stale read fails its condition, and the
// retry that follows reads afresh.
package readmemo

import (
	"context"
	"sync"
)

// Memo holds one request's reads. Its methods are safe on a nil Memo,
// which remembers nothing.
type Memo struct {
	mu    sync.Mutex
	items map[string]any
}

type ctxKey struct{}

// With returns ctx carrying a new, empty memo.
func With(ctx context.Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, &Memo{})
}

// From returns the memo ctx carries, or nil.
func From(ctx context.Context) *Memo {
	m, _ := ctx.Value(ctxKey{}).(*Memo)
	return m
}

// Get returns what was remembered under key.
func (m *Memo) Get(key string) (any, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.items[key]
	return v, ok
}

// Put remembers v under key.
func (m *Memo) Put(key string, v any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.items == nil {
		m.items = map[string]any{}
	}
	m.items[key] = v
}

// Forget drops everything: the store is about to write, or has written.
func (m *Memo) Forget() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.items = nil
	m.mu.Unlock()
}
