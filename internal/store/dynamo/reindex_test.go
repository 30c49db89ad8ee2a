package dynamo_test

import (
	"errors"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// strip removes attributes from an item, as a version before the list
// indexes wrote it.
func strip(t *testing.T, k map[string]types.AttributeValue, attrs ...string) {
	t.Helper()
	names := map[string]string{}
	expr := "REMOVE "
	for i, a := range attrs {
		if i > 0 {
			expr += ", "
		}
		n := fmt.Sprintf("#n%d", i)
		names[n] = a
		expr += n
	}
	if _, err := newClient(nil, nil).UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: k,
		UpdateExpression: aws.String(expr), ExpressionAttributeNames: names}); err != nil {
		t.Fatal(err)
	}
}

// reindexAll runs Reindex one page per run, passing each run's cursor to
// the next, until it is done; it returns the runs' totals and how many
// runs it took.
func reindexAll(t *testing.T, s *dynamo.Store, pageSize int) (dynamo.ReindexReport, int) {
	t.Helper()
	var total dynamo.ReindexReport
	cursor := ""
	for runs := 1; ; runs++ {
		rep, err := s.Reindex(ctx, dynamo.ReindexOptions{Cursor: cursor, PageSize: pageSize, Stop: func() bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		total.Examined += rep.Examined
		total.Fixed += rep.Fixed
		total.Statuses += rep.Statuses
		total.Curies += rep.Curies
		total.TimedOut += rep.TimedOut
		total.Raced += rep.Raced
		if rep.Done {
			if rep.Cursor != "" {
				t.Fatalf("a finished run answered a cursor: %+v", rep)
			}
			return total, runs
		}
		if rep.Cursor == "" {
			t.Fatalf("an unfinished run answered no cursor: %+v", rep)
		}
		cursor = rep.Cursor
	}
}

// Items a version before the list indexes wrote — entities without es,
// timeouts outside P#<p>#TO, terms without CURIE items — are missing from
// `list --status`, `spawns --timed-out` and the terms list until the
// operator's reindex; after it those lists are right and still read what
// they return, and a second reindex fixes nothing.
func TestReindexBackfillsTheListIndexesOfItemsWrittenBeforeThem(t *testing.T) {
	needServer(t)
	const n = 300
	counter := newCounter()
	s := dynamo.New(newClient(nil, counter), table, "test-"+randomName())
	now := t0
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s, Tokens: s, SpawnTimeout: time.Hour, Author: "test", Clock: func() time.Time { return now }})
	seedLedger(t, s, n)

	var doubted []string
	for range 3 {
		e := newClaim()
		e.Status = ledger.Doubted
		if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
			t.Fatal(err)
		}
		strip(t, dynamo.EntityKey(s, e.ID), dynamo.StatusKey)
		doubted = append(doubted, e.ID)
	}
	timedOut := issuePending(t, s, 3)
	for _, id := range timedOut {
		timeOut(t, s, id)
		sp, err := s.GetSpawn(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		strip(t, dynamo.EntityKey(s, sp.EntityID), "to", "toh", dynamo.PendingKey, dynamo.ExpiresAtKey)
	}
	guess := spawn.Spawn{ID: ids.New(ids.Spawn, t0), Kind: spawn.Guess, State: spawn.Resolved, Outcome: spawn.TimeoutRestored,
		Mode: spawn.ModeHarness, IssuedAt: t0, ExpiresAt: t0.Add(time.Hour), Request: []byte(`{"request_id":"g"}`)}
	if _, err := newClient(nil, nil).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: dynamo.SpawnItem(s, guess)}); err != nil {
		t.Fatal(err)
	}
	strip(t, dynamo.SpawnKey(s, guess.ID), dynamo.PendingKey, dynamo.ExpiresAtKey)
	timedOut = append(timedOut, guess.ID)
	var terms []string
	for i := range 3 {
		curie := fmt.Sprintf("ex:term%d", i)
		r, err := svc.Ledger.Define(ctx, curie, "a term", nil)
		if err != nil {
			t.Fatal(err)
		}
		terms = append(terms, r.Entity.ID)
		if _, err := newClient(nil, nil).DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: dynamo.CurieKey(s, curie)}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(doubted)
	slices.Sort(timedOut)
	slices.Sort(terms)

	listDoubted := func() ([]string, error) {
		l, err := svc.Ledger.List(ctx, string(ledger.Doubted))
		var out []string
		for _, e := range l.Entities {
			out = append(out, e.ID)
		}
		slices.Sort(out)
		return out, err
	}
	listTimedOut := func() ([]string, error) {
		l, err := svc.Spawns.List(ctx, service.ViewTimedOut)
		var out []string
		for _, sp := range l.Spawns {
			out = append(out, sp.ID)
		}
		slices.Sort(out)
		return out, err
	}
	listTerms := func() ([]string, error) {
		es, err := s.ListEntities(ctx, store.EntityFilter{Kind: ledger.KindTerm})
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		slices.Sort(out)
		return out, err
	}
	lists := []struct {
		what string
		want []string
		list func() ([]string, error)
	}{{"list --status doubted", doubted, listDoubted}, {"spawns --timed-out", timedOut, listTimedOut}, {"terms", terms, listTerms}}
	for _, l := range lists {
		var got []string
		converges(t, func() bool {
			var err error
			if got, err = l.list(); err != nil {
				t.Fatal(err)
			}
			return len(got) == 0
		}, func() string {
			return fmt.Sprintf("before the reindex %s = %v, want it to miss the old items", l.what, got)
		})
	}

	rep, runs := reindexAll(t, s, 50)
	t.Logf("reindex: %d runs, %+v", runs, rep)
	if runs < 2 || rep.Statuses != 3 || rep.TimedOut != 4 || rep.Curies != 3 || rep.Fixed != 10 || rep.Raced != 0 || rep.Examined < n {
		t.Fatalf("reindex = %+v in %d runs, want 3 statuses, 4 timeouts and 3 CURIE items fixed over several runs", rep, runs)
	}

	const bound = 16.0 // read units, as in TestListsReadUnitsScaleWithTheResultNotTheLedger
	for _, l := range lists {
		var got []string
		converges(t, func() bool {
			var err error
			if got, err = l.list(); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(got) == fmt.Sprint(l.want)
		}, func() string { return fmt.Sprintf("after the reindex %s = %v, want %v", l.what, got, l.want) })
		counter.Reset()
		if _, err := l.list(); err != nil {
			t.Fatal(err)
		}
		use := counter.Total()
		t.Logf("%s after the reindex: %d of %d stored: %.1f read units, %d items read", l.what, len(got), n, use.ReadUnits, use.ItemsRead)
		if use.ReadUnits > bound || use.ItemsRead > 20 {
			t.Errorf("%s read %.1f units and %d items after the reindex: the read follows the ledger", l.what, use.ReadUnits, use.ItemsRead)
		}
	}
	counter.Reset()
	if _, err := svc.Ledger.Define(ctx, "ex:term1", "again", nil); err == nil {
		t.Fatal("after the reindex a second define of ex:term1 was accepted")
	}
	if use := counter.Total(); use.ReadUnits > bound {
		t.Errorf("the CURIE check at define read %.1f units after the reindex", use.ReadUnits)
	}

	again, _ := reindexAll(t, s, 100)
	if again.Fixed != 0 || again.Raced != 0 || again.Examined != rep.Examined {
		t.Fatalf("a second reindex = %+v, want nothing fixed among the same %d items", again, rep.Examined)
	}
	if err := counter.Err(); err != nil {
		t.Fatal(err)
	}
}

// A commit that changes an entity while the reindex runs is never
// overwritten: the reindex's write is conditioned on the version it read,
// so each entity ends as its commit left it and is listed under the status
// the commit gave it.
func TestAReindexNeverOverwritesACommitThatRacesIt(t *testing.T) {
	s := newStore(t)
	const n = 40
	var claims []ledger.Entity
	for range n {
		e := newClaim()
		e.Status = ledger.Doubted
		if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
			t.Fatal(err)
		}
		strip(t, dynamo.EntityKey(s, e.ID), dynamo.StatusKey)
		claims = append(claims, e)
	}
	racer := dynamo.New(newClient(nil, nil), table, s.Project()) // another process's store
	start := make(chan struct{})
	var wg sync.WaitGroup
	var rep dynamo.ReindexReport
	wg.Add(2)
	go func() {
		defer wg.Done()
		<-start
		rep, _ = reindexAll(t, s, 4)
	}()
	var commitErr error
	go func() {
		defer wg.Done()
		<-start
		for i := range claims { // from the end, so that it meets the reindex halfway
			e2 := claims[len(claims)-1-i]
			e2.Version, e2.Status = 2, ledger.Verified
			if err := racer.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: 1}}}); err != nil {
				commitErr = errors.Join(commitErr, err)
			}
		}
	}()
	close(start)
	wg.Wait()
	if commitErr != nil {
		t.Fatal(commitErr)
	}
	t.Logf("reindex beside %d commits: %+v", n, rep)
	if rep.Examined != n || rep.Fixed+rep.Raced > n {
		t.Fatalf("reindex beside %d commits examined %d, fixed %d and raced %d", n, rep.Examined, rep.Fixed, rep.Raced)
	}
	for _, e := range claims {
		got, err := s.GetEntity(ctx, e.ID)
		if err != nil || got.Version != 2 || got.Status != ledger.Verified {
			t.Fatalf("%s after the race: %+v %v", e.ID, got, err)
		}
		it, err := newClient(nil, nil).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: dynamo.EntityKey(s, e.ID), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if es, _ := it.Item[dynamo.StatusKey].(*types.AttributeValueMemberS); es == nil || es.Value != string(ledger.Verified) {
			t.Fatalf("%s is indexed under %v, want verified: the reindex overwrote its commit", e.ID, it.Item[dynamo.StatusKey])
		}
	}
	list := func(st ledger.Status) int {
		es, err := s.ListEntities(ctx, store.EntityFilter{Status: st, Indexed: true})
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	converges(t, func() bool { return list(ledger.Verified) == n && list(ledger.Doubted) == 0 },
		func() string {
			return fmt.Sprintf("verified %d, doubted %d", list(ledger.Verified), list(ledger.Doubted))
		})
}

// A project with nothing stored, or a cursor the project's reindex did
// not make, is refused before anything is written.
func TestAReindexOfAnUnknownProjectOrWithABadCursorChangesNothing(t *testing.T) {
	s := newStore(t)
	e := newClaim()
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
		t.Fatal(err)
	}
	strip(t, dynamo.EntityKey(s, e.ID), dynamo.StatusKey)
	if _, err := newStore(t).Reindex(ctx, dynamo.ReindexOptions{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown project: %v", err)
	}
	other, err := newStore(t).Reindex(ctx, dynamo.ReindexOptions{})
	if err == nil || other.Fixed != 0 {
		t.Fatalf("an unknown project: %+v %v", other, err)
	}
	o := newStore(t)
	if err := o.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: newClaim()}}}); err != nil {
		t.Fatal(err)
	}
	theirs, err := o.Reindex(ctx, dynamo.ReindexOptions{PageSize: 1, Stop: func() bool { return true }})
	if err != nil || theirs.Cursor == "" {
		t.Fatalf("another project's first page: %+v %v", theirs, err)
	}
	for _, c := range []string{"not-a-cursor", "cjEAeA", theirs.Cursor} {
		if rep, err := s.Reindex(ctx, dynamo.ReindexOptions{Cursor: c}); !errors.Is(err, dynamo.ErrBadCursor) || rep.Fixed != 0 {
			t.Fatalf("cursor %q: %+v %v", c, rep, err)
		}
	}
	it, err := newClient(nil, nil).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: dynamo.EntityKey(s, e.ID), ConsistentRead: aws.Bool(true)})
	if err != nil || it.Item[dynamo.StatusKey] != nil {
		t.Fatalf("a refused reindex wrote: %v %v", it.Item[dynamo.StatusKey], err)
	}
}
