package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
)

// RunPasskeys is the conformance suite of store.PasskeyStore; newStore
// must return an empty store each call.
func RunPasskeys(t *testing.T, newStore func(t *testing.T) store.PasskeyStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.PasskeyStore)
	}{
		{"an approver's passkeys read back oldest first, and only theirs", passkeysPerApprover},
		{"a passkey put again is replaced, not doubled", passkeyReplaced},
		{"a ceremony is created once", ceremonyCreateOnce},
		{"a ceremony is taken once: a second take is ErrNotFound", ceremonyTakenOnce},
		{"concurrent takes of one ceremony: exactly one gets it", ceremonyTakeRace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func passkey(id, approver string, at time.Time, count int) store.PasskeyCredential {
	data, _ := json.Marshal(map[string]any{"sign_count": count})
	return store.PasskeyCredential{ID: id, Approver: approver, Data: data, CreatedAt: at}
}

func passkeysPerApprover(t *testing.T, s store.PasskeyStore) {
	ctx := context.Background()
	must(t, s.PutPasskey(ctx, passkey("cred-b", "tok:A", base.Add(time.Second), 0)))
	must(t, s.PutPasskey(ctx, passkey("cred-a", "tok:A", base, 0)))
	must(t, s.PutPasskey(ctx, passkey("cred-c", "tok:B", base, 0)))
	got, err := s.Passkeys(ctx, "tok:A")
	must(t, err)
	if len(got) != 2 || got[0].ID != "cred-a" || got[1].ID != "cred-b" {
		t.Fatalf("tok:A's passkeys: %+v", got)
	}
	if none, err := s.Passkeys(ctx, "tok:C"); err != nil || len(none) != 0 {
		t.Fatalf("an approver without passkeys: %+v %v", none, err)
	}
}

func passkeyReplaced(t *testing.T, s store.PasskeyStore) {
	ctx := context.Background()
	must(t, s.PutPasskey(ctx, passkey("cred-a", "tok:A", base, 1)))
	must(t, s.PutPasskey(ctx, passkey("cred-a", "tok:A", base.Add(time.Minute), 7)))
	got, err := s.Passkeys(ctx, "tok:A")
	must(t, err)
	if len(got) != 1 || string(got[0].Data) != `{"sign_count":7}` {
		t.Fatalf("after a second put: %+v", got)
	}
}

func ceremony(key string) store.PasskeyCeremony {
	return store.PasskeyCeremony{Key: key, Kind: service.CeremonyApprove, Approver: "tok:A", ApprovalID: "apr:01HX05A9K8VP0000000000000A",
		ShownDigest: "sha256:ab", Nonce: []byte{1, 2, 3}, Session: json.RawMessage(`{"challenge":"x"}`), Expires: base.Add(time.Minute)}
}

func ceremonyCreateOnce(t *testing.T, s store.PasskeyStore) {
	ctx := context.Background()
	c := ceremony("chal-1")
	must(t, s.PutPasskeyCeremony(ctx, c))
	other := c
	other.Approver = "tok:B"
	wantCondition(t, s.PutPasskeyCeremony(ctx, other), c.Key)
	got, err := s.TakePasskeyCeremony(ctx, c.Key)
	must(t, err)
	if got.Approver != "tok:A" || got.ApprovalID != c.ApprovalID || got.ShownDigest != c.ShownDigest || string(got.Nonce) != string(c.Nonce) ||
		!got.Expires.Equal(c.Expires) || string(got.Session) != string(c.Session) {
		t.Fatalf("read back %+v", got)
	}
}

func ceremonyTakenOnce(t *testing.T, s store.PasskeyStore) {
	ctx := context.Background()
	if _, err := s.TakePasskeyCeremony(ctx, "never-issued"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a ceremony never issued: want ErrNotFound, got %v", err)
	}
	must(t, s.PutPasskeyCeremony(ctx, ceremony("chal-2")))
	_, err := s.TakePasskeyCeremony(ctx, "chal-2")
	must(t, err)
	if _, err := s.TakePasskeyCeremony(ctx, "chal-2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a second take: want ErrNotFound, got %v", err)
	}
}

func ceremonyTakeRace(t *testing.T, s store.PasskeyStore) {
	ctx := context.Background()
	must(t, s.PutPasskeyCeremony(ctx, ceremony("chal-3")))
	var won, lost atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.TakePasskeyCeremony(ctx, "chal-3")
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, store.ErrNotFound):
				lost.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 || lost.Load() != 7 {
		t.Fatalf("%d takers got it, %d did not; want exactly one", won.Load(), lost.Load())
	}
}
