package storetest

import "testing"

// storeCase is one named case of a conformance suite over a store S.
type storeCase[S any] struct {
	name string
	fn   func(t *testing.T, s S)
}

// runCases runs each case as a subtest on its own empty store from
// newStore.
func runCases[S any](t *testing.T, newStore func(t *testing.T) S, cases []storeCase[S]) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}
