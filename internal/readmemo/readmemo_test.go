package readmemo

import (
	"context"
	"testing"
)

func TestAMemoRemembersUntilForgottenAndOnlyInItsRequest(t *testing.T) {
	ctx := With(context.Background())
	m := From(ctx)
	m.Put("a", 1)
	if v, ok := From(ctx).Get("a"); !ok || v != 1 {
		t.Fatalf("get = %v %v", v, ok)
	}
	if _, ok := From(With(context.Background())).Get("a"); ok {
		t.Fatal("another request saw this request's read")
	}
	m.Forget()
	if _, ok := m.Get("a"); ok {
		t.Fatal("remembered after Forget")
	}
	var none *Memo = From(context.Background())
	none.Put("a", 1)
	if _, ok := none.Get("a"); ok {
		t.Fatal("a request without a memo remembered")
	}
	none.Forget()
}
