package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/store"
)

// RunSlackLinks is the conformance suite of store.SlackLinkStore;
// newStore must return an empty store each call.
func RunSlackLinks(t *testing.T, newStore func(t *testing.T) store.SlackLinkStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.SlackLinkStore)
	}{
		{"a missing link is ErrNotFound", slackLinkMissing},
		{"a link code is stored once and taken once", slackLinkCodeOnce},
		{"racing takers of one code: exactly one gets it", slackLinkCodeRace},
		{"a link reads back and a new one replaces it", slackLinkReplaced},
		{"a question's message is kept per channel", slackMessageKept},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

var slackAt = time.Date(2026, 12, 3, 5, 0, 0, 0, time.UTC)

func slackLinkMissing(t *testing.T, s store.SlackLinkStore) {
	ctx := context.Background()
	if _, err := s.GetSlackLink(ctx, "T1", "U1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a link never made: want ErrNotFound, got %v", err)
	}
	if _, err := s.TakeSlackLinkCode(ctx, "nohash"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a code never made: want ErrNotFound, got %v", err)
	}
}

func slackLinkCodeOnce(t *testing.T, s store.SlackLinkStore) {
	ctx := context.Background()
	c := store.SlackLinkCode{Hash: "h1", TokenID: "tok:a", ExpiresAt: slackAt.Add(time.Minute)}
	must(t, s.PutSlackLinkCode(ctx, c))
	var cf *store.ConditionFailed
	if err := s.PutSlackLinkCode(ctx, store.SlackLinkCode{Hash: "h1", TokenID: "tok:b", ExpiresAt: slackAt}); !errors.As(err, &cf) {
		t.Fatalf("a second code of one hash: want ConditionFailed, got %v", err)
	}
	got, err := s.TakeSlackLinkCode(ctx, "h1")
	if err != nil || got.TokenID != "tok:a" || !got.ExpiresAt.Equal(c.ExpiresAt) {
		t.Fatalf("taken: %+v %v", got, err)
	}
	if _, err := s.TakeSlackLinkCode(ctx, "h1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a code taken twice: want ErrNotFound, got %v", err)
	}
}

func slackLinkCodeRace(t *testing.T, s store.SlackLinkStore) {
	ctx := context.Background()
	must(t, s.PutSlackLinkCode(ctx, store.SlackLinkCode{Hash: "race", TokenID: "tok:a", ExpiresAt: slackAt.Add(time.Minute)}))
	var won atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.TakeSlackLinkCode(ctx, "race"); err == nil {
				won.Add(1)
			} else if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a losing taker: want ErrNotFound, got %v", err)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d takers got one code, want exactly 1", won.Load())
	}
}

func slackLinkReplaced(t *testing.T, s store.SlackLinkStore) {
	ctx := context.Background()
	must(t, s.PutSlackLink(ctx, store.SlackLink{Team: "T1", User: "U1", TokenID: "tok:a", LinkedAt: slackAt}))
	must(t, s.PutSlackLink(ctx, store.SlackLink{Team: "T1", User: "U2", TokenID: "tok:b", LinkedAt: slackAt}))
	if l, err := s.GetSlackLink(ctx, "T1", "U1"); err != nil || l.TokenID != "tok:a" || !l.LinkedAt.Equal(slackAt) {
		t.Fatalf("U1's link: %+v %v", l, err)
	}
	must(t, s.PutSlackLink(ctx, store.SlackLink{Team: "T1", User: "U1", TokenID: "tok:c", LinkedAt: slackAt.Add(time.Hour)}))
	if l, err := s.GetSlackLink(ctx, "T1", "U1"); err != nil || l.TokenID != "tok:c" {
		t.Fatalf("U1's new link: %+v %v", l, err)
	}
	if _, err := s.GetSlackLink(ctx, "T2", "U1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a user of another workspace: want ErrNotFound, got %v", err)
	}
}

func slackMessageKept(t *testing.T, s store.SlackLinkStore) {
	ctx := context.Background()
	if _, err := s.GetSlackMessage(ctx, "C1", "apr:1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a message never posted: want ErrNotFound, got %v", err)
	}
	must(t, s.PutSlackMessage(ctx, store.SlackMessage{ApprovalID: "apr:1", Channel: "C1", TS: "1.1"}))
	must(t, s.PutSlackMessage(ctx, store.SlackMessage{ApprovalID: "apr:1", Channel: "C2", TS: "2.2"}))
	if m, err := s.GetSlackMessage(ctx, "C1", "apr:1"); err != nil || m.TS != "1.1" {
		t.Fatalf("C1: %+v %v", m, err)
	}
	if m, err := s.GetSlackMessage(ctx, "C2", "apr:1"); err != nil || m.TS != "2.2" {
		t.Fatalf("C2: %+v %v", m, err)
	}
}
