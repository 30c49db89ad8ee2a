package mcp

import "testing"

// A multi round-trip confirmation answers one call once: its state is
// single-use and bound to the tool and arguments it asked about, so an
// accept cannot be replayed, or moved onto another call.
func TestAnAcceptedRequestStateAnswersOneCallOnce(t *testing.T) {
	var a asked
	lock := "lock\x00{\"id\":\"claim:a\"}"
	state := a.put(lock)
	if a.take(state, "lock\x00{\"id\":\"claim:b\"}") {
		t.Fatal("a state answered another call")
	}
	state = a.put(lock)
	if !a.take(state, lock) {
		t.Fatal("the state does not answer its own call")
	}
	if a.take(state, lock) {
		t.Fatal("a state answered twice")
	}
	if a.take("forged", lock) {
		t.Fatal("a forged state answered")
	}
	for range maxAsked + 10 {
		a.put(lock)
	}
	if len(a.calls) > maxAsked {
		t.Fatalf("%d open states kept", len(a.calls))
	}
}
