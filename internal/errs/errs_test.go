package errs

import (
	"errors"
	"fmt"
	"testing"
)

// An error explains itself: its code, message, entity and the operation
// that failed, and it keeps its cause for errors.Is and errors.As.
func TestAnErrorExplainsItself(t *testing.T) {
	cause := errors.New("disk full")
	e := E(StoreError, "the store failed").On("claim:1").In("ledger.next").Unmet("a writable store").Wrap(cause)
	if got, want := e.Error(), "ledger.next: store-error: the store failed (claim:1)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("outer: %w", e)
	if !Is(wrapped, StoreError) || As(wrapped) != e || !errors.Is(wrapped, cause) {
		t.Fatal("the code or the cause is lost through wrapping")
	}
	if len(e.UnmetClauses) != 1 || len(e.Remediation) != 0 {
		t.Fatalf("clauses %v, remediation %v", e.UnmetClauses, e.Remediation)
	}
	if As(nil) != nil || As(cause).Code != Internal || Is(cause, Internal) {
		t.Fatal("As or Is is wrong on a plain error")
	}
}
