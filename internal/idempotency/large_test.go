package idempotency_test

import (
	"bytes"
	"testing"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/idempotency"
)

// A keyed call whose response is over 350 KiB (one DynamoDB item) still
// has its response written in its commit: Prepare makes the Put, which
// the store splits over several items of the transaction (storetest's
// "a response over 350 KiB commits with its write").
func TestAResponseOver350KiBIsWrittenWithItsCommit(t *testing.T) {
	body := append([]byte(`{"ok":true,"data":"`), bytes.Repeat([]byte("x"), 1<<20)...)
	body = append(body, `"}`...)
	p := &idempotency.Pending{Name: "k", Fingerprint: "fp",
		Respond: func(any, []envelope.Warning) (int, []byte, bool) { return 201, body, true }}
	put := p.Prepare(struct{}{}, nil, idempotency.MaxBody)
	if put == nil || !bytes.Equal(put.Body, body) {
		t.Fatal("a 1 MiB response is not written with its commit")
	}
	p.Committed(put, nil)
	if _, sent, ok := p.Sent(); !ok || !bytes.Equal(sent, body) {
		t.Fatal("the committed response is not the one sent")
	}
}
