package dynamo_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// issuePending commits n claims, each with a spawn pending on it expiring
// a second after the previous one, and returns the spawn ids in expiry
// order.
func issuePending(t *testing.T, s *dynamo.Store, n int) []string {
	t.Helper()
	var out []string
	for i := range n {
		e := newClaim()
		if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
			t.Fatal(err)
		}
		sp, e2 := newPendingOn(e)
		sp.ID = ids.New(ids.Spawn, t0)
		e2.PendingSpawn, e2.LastSpawn = sp.ID, sp.ID
		sp.ExpiresAt = t0.Add(time.Hour + time.Duration(i)*time.Second)
		if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: 1}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}}}); err != nil {
			t.Fatal(err)
		}
		out = append(out, sp.ID)
	}
	return out
}

// indexPartitions reads the project's pending_expiry entries straight
// from the index and counts them by partition key.
func indexPartitions(t *testing.T, project string, shards int) map[string]int {
	t.Helper()
	client := newClient(nil, nil)
	out := map[string]int{}
	for n := range shards {
		pk := "P#" + project + "#S"
		if n > 0 {
			pk += fmt.Sprintf("#%d", n)
		}
		q, err := client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String(dynamo.PendingExpiryIndex),
			KeyConditionExpression:    aws.String("#p = :p"),
			ExpressionAttributeNames:  map[string]string{"#p": dynamo.PendingKey},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: pk}}})
		if err != nil {
			t.Fatal(err)
		}
		if q.Count > 0 {
			out[pk] = int(q.Count)
		}
	}
	return out
}

func TestAProjectsPendingSpawnsAreSpreadOverItsShardsAndEverySweepReadsThemAll(t *testing.T) {
	s := newStore(t)
	if err := s.SetPendingShards(4); err != nil {
		t.Fatal(err)
	}
	want := issuePending(t, s, 24)
	var parts map[string]int
	converges(t, func() bool {
		parts = indexPartitions(t, s.Project(), 4)
		total := 0
		for _, n := range parts {
			total += n
		}
		return total == len(want)
	}, func() string { return fmt.Sprintf("index entries by partition: %v", parts) })
	if len(parts) < 2 {
		t.Fatalf("24 pending spawns in %d index partition(s) of 4: %v", len(parts), parts)
	}
	// Every sweep path reads every shard, earliest expiry first across them.
	var got []string
	converges(t, func() bool {
		due, err := s.ExpiringSpawns(ctx, time.Time{}, t0.Add(2*time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		got = spawnIDsOf(due)
		return fmt.Sprint(got) == fmt.Sprint(want)
	}, func() string { return fmt.Sprintf("due = %v, want %v", got, want) })
	// A limit is the earliest limit of all the shards, and a window the
	// spawns inside it.
	due, err := s.ExpiringSpawns(ctx, time.Time{}, t0.Add(2*time.Hour), 5)
	if err != nil || fmt.Sprint(spawnIDsOf(due)) != fmt.Sprint(want[:5]) {
		t.Fatalf("limit 5 = %v %v, want %v", spawnIDsOf(due), err, want[:5])
	}
	due, err = s.ExpiringSpawns(ctx, t0.Add(time.Hour+9*time.Second), t0.Add(time.Hour+12*time.Second), 100)
	if err != nil || fmt.Sprint(spawnIDsOf(due)) != fmt.Sprint(want[10:13]) {
		t.Fatalf("window = %v %v, want %v", spawnIDsOf(due), err, want[10:13])
	}
}

func TestRaisingTheShardCountKeepsSpawnsPendingUnderTheOldKeysSwept(t *testing.T) {
	// Items written before the index was sharded carry P#<p>#S, which is
	// shard 0's key; items written under fewer shards stay in theirs.
	old := newStore(t)
	if err := old.SetPendingShards(1); err != nil {
		t.Fatal(err)
	}
	legacy := issuePending(t, old, 6)
	if parts := indexPartitions(t, old.Project(), 1); len(parts) > 1 {
		t.Fatalf("one shard wrote %v", parts)
	}
	raised := dynamo.New(newClient(nil, nil), table, old.Project())
	if err := raised.SetPendingShards(8); err != nil {
		t.Fatal(err)
	}
	fresh := issuePending(t, raised, 6)
	want := append(append([]string(nil), legacy...), fresh...)
	sort.Strings(want)
	var got []string
	converges(t, func() bool {
		due, err := raised.ExpiringSpawns(ctx, time.Time{}, t0.Add(2*time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		got = spawnIDsOf(due)
		sort.Strings(got)
		return fmt.Sprint(got) == fmt.Sprint(want)
	}, func() string { return fmt.Sprintf("due after raising the shards = %v, want %v", got, want) })
	// Resolving one written under the old count takes it out of the index.
	timeOut(t, raised, legacy[0])
	converges(t, func() bool {
		due, err := raised.ExpiringSpawns(ctx, time.Time{}, t0.Add(2*time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(due) == len(want)-1 && !strings.Contains(fmt.Sprint(spawnIDsOf(due)), legacy[0])
	}, func() string { return "the resolved spawn is still due" })
}

func TestTheShardCountIsBounded(t *testing.T) {
	s := dynamo.New(nil, "t", "p")
	for _, n := range []int{0, -1, dynamo.MaxPendingShards + 1} {
		if err := s.SetPendingShards(n); err == nil {
			t.Fatalf("SetPendingShards(%d) accepted", n)
		}
	}
	if s.PendingShards() != dynamo.DefaultPendingShards {
		t.Fatalf("shards after refusals = %d", s.PendingShards())
	}
	for v, want := range map[string]int{"": dynamo.DefaultPendingShards, "4": 4, " 2 ": 2, "0": 0, "65": 0, "two": 0} {
		n, err := dynamo.ParsePendingShards(v)
		if (want == 0) != (err != nil) || (err == nil && n != want) {
			t.Errorf("ParsePendingShards(%q) = %d %v, want %d", v, n, err, want)
		}
	}
}

func spawnIDsOf(sps []spawn.Spawn) []string {
	out := []string{}
	for _, sp := range sps {
		out = append(out, sp.ID)
	}
	return out
}
