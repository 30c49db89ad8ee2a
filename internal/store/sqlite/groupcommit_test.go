package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/store"
)

type holdKey struct{}

// Writers that queue while another write holds the connection commit in
// one transaction, each in its own savepoint: the one whose write fails
// (its BeforeCommit refuses) and the one whose condition fails get their
// own errors and leave nothing behind, and the others commit.
func TestWritesQueuedBehindACommitCommitTogetherAndAFailedOneAlone(t *testing.T) {
	s := newStore(t)
	held, release := make(chan struct{}), make(chan struct{})
	refused := errors.New("refused by the test")
	s.Hooks.BeforeCommit = func(ctx context.Context) error {
		switch ctx.Value(holdKey{}) {
		case "hold":
			close(held)
			<-release
		case "fail":
			return refused
		}
		return nil
	}
	first, ok1, failing, ok2 := requestedTx("first"), requestedTx("second"), requestedTx("refused"), requestedTx("third")
	stale := requestedTx("stale")
	if err := s.Commit(ctx, stale); err != nil {
		t.Fatal(err)
	}
	stale.Entities[0].PrevVersion = 7 // the stored version is 1
	stale.Events[0].ID += "b"
	var wg sync.WaitGroup
	errsOf := make([]error, 5)
	commit := func(i int, c context.Context, tx store.Tx) {
		defer wg.Done()
		errsOf[i] = s.Commit(c, tx)
	}
	wg.Add(1)
	go commit(0, context.WithValue(ctx, holdKey{}, "hold"), first)
	<-held
	wg.Add(4)
	go commit(1, ctx, ok1)
	go commit(2, context.WithValue(ctx, holdKey{}, "fail"), failing)
	go commit(3, ctx, stale)
	go commit(4, ctx, ok2)
	for s.QueuedWrites() < 4 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	var cf *store.ConditionFailed
	if errsOf[0] != nil || errsOf[1] != nil || errsOf[4] != nil || !errors.Is(errsOf[2], refused) || !errors.As(errsOf[3], &cf) {
		t.Fatalf("results %v; want nil, nil, refused, a condition failed, nil", errsOf)
	}
	if n := s.GroupCommits(); n != 1 {
		t.Fatalf("group commits: %d, want 1", n)
	}
	for _, tx := range []store.Tx{first, ok1, ok2} {
		if _, err := s.GetEntity(ctx, tx.Entities[0].Entity.ID); err != nil {
			t.Fatalf("%s: %v", tx.Entities[0].Entity.Statement, err)
		}
	}
	if _, err := s.GetEntity(ctx, failing.Entities[0].Entity.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused write's entity: %v, want not found", err)
	}
	for _, tx := range []store.Tx{failing, stale} {
		evs, err := s.Events(ctx, tx.Entities[0].Entity.ID)
		if err != nil || len(evs) > 1 {
			t.Fatalf("events of a failed write: %d, %v; want none of its own", len(evs), err)
		}
	}
}

// A write whose caller has gone by the time its batch runs commits
// nothing, and the batch's others commit.
func TestAQueuedWriteWhoseCallerHasGoneCommitsNothing(t *testing.T) {
	s := newStore(t)
	held, release := make(chan struct{}), make(chan struct{})
	s.Hooks.BeforeCommit = func(ctx context.Context) error {
		if ctx.Value(holdKey{}) == "hold" {
			close(held)
			<-release
		}
		return nil
	}
	gone, cancel := context.WithCancel(ctx)
	first, kept, dropped := requestedTx("first"), requestedTx("kept"), requestedTx("dropped")
	var wg sync.WaitGroup
	var errFirst, errKept, errDropped error
	wg.Add(1)
	go func() { defer wg.Done(); errFirst = s.Commit(context.WithValue(ctx, holdKey{}, "hold"), first) }()
	<-held
	wg.Add(2)
	go func() { defer wg.Done(); errKept = s.Commit(ctx, kept) }()
	go func() { defer wg.Done(); errDropped = s.Commit(gone, dropped) }()
	for s.QueuedWrites() < 2 {
		runtime.Gosched()
	}
	cancel()
	close(release)
	wg.Wait()
	if errFirst != nil || errKept != nil || errDropped == nil {
		t.Fatalf("results %v, %v, %v; want nil, nil, an error", errFirst, errKept, errDropped)
	}
	if _, err := s.GetEntity(ctx, dropped.Entities[0].Entity.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the gone caller's entity: %v, want not found", err)
	}
	if _, err := s.GetEntity(ctx, kept.Entities[0].Entity.ID); err != nil {
		t.Fatal(err)
	}
}

// A batch whose savepoints copy far more than SQLite's 64 KiB spill size
// into the sub-journal keeps it in memory (temp_store=MEMORY on the write
// connection: no temporary file written by every savepoint) and still
// rolls back the one write that fails, alone.
func TestABatchLargerThanTheSubJournalSpillRollsBackAFailedWriteAlone(t *testing.T) {
	s := newStore(t)
	held, release := make(chan struct{}), make(chan struct{})
	refused := errors.New("refused by the test")
	s.Hooks.BeforeCommit = func(ctx context.Context) error {
		switch ctx.Value(holdKey{}) {
		case "hold":
			close(held)
			<-release
		case "fail":
			return refused
		}
		return nil
	}
	if err := s.Commit(ctx, requestedTx("opens the write connection")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.WriteConnTempStore(); err != nil || v != 2 {
		t.Fatalf("temp_store on the write connection: %d, %v; want 2 (MEMORY)", v, err)
	}
	big := strings.Repeat("a claim long enough to span pages ", 400) // ~13 KiB per write
	const n = 16
	txs := make([]store.Tx, n)
	errsOf := make([]error, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		errsOf[0] = s.Commit(context.WithValue(ctx, holdKey{}, "hold"), requestedTx("first"))
	}()
	<-held
	for i := 1; i < n; i++ {
		txs[i] = requestedTx(fmt.Sprintf("%d %s", i, big))
		c := ctx
		if i == n/2 {
			c = context.WithValue(ctx, holdKey{}, "fail")
		}
		wg.Add(1)
		go func(i int, c context.Context) { defer wg.Done(); errsOf[i] = s.Commit(c, txs[i]) }(i, c)
	}
	for s.QueuedWrites() < n-1 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	for i := 1; i < n; i++ {
		_, err := s.GetEntity(ctx, txs[i].Entities[0].Entity.ID)
		if i == n/2 {
			if !errors.Is(errsOf[i], refused) || !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the refused write: %v, and its entity %v; want refused and not found", errsOf[i], err)
			}
			continue
		}
		if errsOf[i] != nil || err != nil {
			t.Fatalf("write %d: %v, its entity %v", i, errsOf[i], err)
		}
	}
	if s.GroupCommits() == 0 {
		t.Fatal("no group commit ran")
	}
}
