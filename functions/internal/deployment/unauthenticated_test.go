package deployment_test

import (
	"crypto/rand"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/ids"
)

// An unauthenticated request writes nothing: these tests count the items
// of the whole table before and after, and the write requests the
// backend's client sent.

// countItems is the number of items in the test table.
func countItems(t *testing.T) int {
	t.Helper()
	n := 0
	in := &dynamodb.ScanInput{TableName: aws.String(table)}
	for {
		out, err := newClient(nil, nil).Scan(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		n += len(out.Items)
		if len(out.LastEvaluatedKey) == 0 {
			return n
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// writes is how many write requests the backend's client sent.
func (a *api) writes() int64 {
	var n int64
	for op, u := range a.counter.Usage() {
		switch op {
		case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
			n += u.Requests
		}
	}
	return n
}

func (a *api) builds(project string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.built[project]
}

// forgedCallback is a well-formed callback token naming project, signed
// with a secret the project never had.
func forgedCallback(project string) string {
	secret := make([]byte, 32)
	rand.Read(secret)
	return auth.CallbackTokenOf(secret, project, ids.New(ids.Spawn, t0))
}

func TestAForgedCallbackTokenForAnUnknownProjectWritesNothing(t *testing.T) {
	a := newAPI(t)
	// A project that exists (it has a token) but has issued no spawn.
	known := "known-" + randomName()
	a.token(known, auth.RoleHarness)
	a.counter.Reset()
	before := countItems(t)
	for _, project := range []string{"unknown-" + randomName(), "unknown-" + randomName(), known} {
		tok := forgedCallback(project)
		if r := a.call(tok, "show", map[string]any{"id": ids.New(ids.Claim, t0)}); r.status != 401 || r.str("code") != "unauthenticated" {
			t.Fatalf("a forged callback token for %s: %d %v, want 401 unauthenticated", project, r.status, r.env.Data)
		}
	}
	if w := a.writes(); w != 0 {
		t.Errorf("the backend sent %d write requests for forged callback tokens: %v", w, a.counter.Usage())
	}
	if after := countItems(t); after != before {
		t.Fatalf("the table had %d items before the forged callback tokens and %d after", before, after)
	}
}

func TestAWrongBearerTokenWritesNothing(t *testing.T) {
	a := newAPI(t)
	p := "bearer-" + randomName()
	harness := a.token(p, auth.RoleHarness)
	id, _, _ := auth.ParseBearer(harness)
	// A process that has not seen the project yet: nothing of it is warm.
	cold := newAPI(t)
	before := countItems(t)
	for name, tok := range map[string]string{
		"wrong secret": auth.BearerString(id, "not-the-secret"),
		"unknown id":   auth.BearerString(ids.New(ids.Token, t0), "secret"),
		"malformed":    "dont_" + id,
	} {
		if r := cold.call(tok, "list", map[string]any{}); r.status != 401 || r.str("code") != "unauthenticated" {
			t.Errorf("%s: %d %v, want 401 unauthenticated", name, r.status, r.env.Data)
		}
	}
	if w := cold.writes(); w != 0 {
		t.Errorf("the backend sent %d write requests for wrong bearer tokens: %v", w, cold.counter.Usage())
	}
	if after := countItems(t); after != before {
		t.Errorf("the table had %d items before the wrong bearer tokens and %d after", before, after)
	}
	if n := cold.builds(p); n != 0 {
		t.Errorf("the backend built %d services of %s for a token that failed: only an authenticated project is kept", n, p)
	}
	// The right token still works, and only then is the project built.
	if r := cold.call(harness, "list", map[string]any{}); r.status != 200 {
		t.Fatalf("the right token: %d %v", r.status, r.env.Data)
	}
	if n := cold.builds(p); n != 1 {
		t.Fatalf("%d services of %s built after one good call, want 1", n, p)
	}
}

// The per-process project cache holds at most 1024 projects. Forged
// callback tokens name any project they like: they must not fill the
// cache and push out (or wipe) the projects that are really in use.
func TestManyUnknownProjectsDoNotEvictAWarmProject(t *testing.T) {
	a := newAPI(t)
	p := "warm-" + randomName()
	harness := a.token(p, auth.RoleHarness)
	if r := a.call(harness, "list", map[string]any{}); r.status != 200 {
		t.Fatalf("list: %d %v", r.status, r.env.Data)
	}
	warm := a.backend.Project(p).Service
	built := a.builds(p)
	a.counter.Reset()

	const unknown = 1100 // more than the cache holds
	prefix := "flood-" + randomName() + "-"
	names := make(chan string)
	go func() {
		for i := range unknown {
			names <- prefix + strconv.Itoa(i)
		}
		close(names)
	}()
	var wg sync.WaitGroup
	var refused sync.Map
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				if _, _, err := a.backend.Authenticate(ctx, forgedCallback(name)); err == nil {
					t.Errorf("a forged callback token for %s authenticated", name)
				} else {
					refused.Store(name, true)
				}
			}
		}()
	}
	wg.Wait()
	if n := deployment.CachedProjects(a.backend); n != 1 {
		t.Errorf("%d projects cached after the flood, want the warm one only", n)
	}
	if got := a.backend.Project(p).Service; got != warm || a.builds(p) != built {
		t.Errorf("the warm project was evicted by %d unknown ones: its service was built again", unknown)
	}
	n, builds := 0, 0
	refused.Range(func(k, _ any) bool {
		n++
		builds += a.builds(k.(string))
		return true
	})
	if n != unknown || builds != 0 {
		t.Errorf("%d of %d forged tokens refused; %d services built for unknown projects, want none", n, unknown, builds)
	}
	if w := a.writes(); w != 0 {
		t.Fatalf("%d write requests: %v", w, a.counter.Usage())
	}
}

// A full cache lets its least recently used project go, one at a time.
func TestAFullProjectCacheEvictsOnlyTheLeastRecentlyUsedProject(t *testing.T) {
	a := newAPI(t)
	deployment.SetMaxCachedProjects(a.backend, 2)
	names, tokens := make([]string, 3), make([]string, 3)
	for i := range names {
		names[i] = "lru-" + strconv.Itoa(i) + "-" + randomName()
		tokens[i] = a.token(names[i], auth.RoleHarness)
	}
	// a.token kept the first two and then evicted the least recent.
	use := func(i int) {
		t.Helper()
		if r := a.call(tokens[i], "list", map[string]any{}); r.status != 200 {
			t.Fatalf("list in %s: %d %v", names[i], r.status, r.env.Data)
		}
	}
	use(0) // 0 is back (built again); 1 goes
	use(2) // 2 is warm
	built := []int{a.builds(names[0]), a.builds(names[1]), a.builds(names[2])}
	use(0)
	use(2)
	if now := []int{a.builds(names[0]), a.builds(names[1]), a.builds(names[2])}; !slices.Equal(now, built) {
		t.Fatalf("services built %v then %v: the two most recent projects were not kept", built, now)
	}
	use(1) // evicts 0, the least recently used
	use(2)
	if a.builds(names[2]) != built[2] || a.builds(names[0]) != built[0] || a.builds(names[1]) != built[1]+1 {
		t.Fatalf("after using %s: built %v, was %v", names[1], []int{a.builds(names[0]), a.builds(names[1]), a.builds(names[2])}, built)
	}
	use(0)
	if a.builds(names[0]) != built[0]+1 {
		t.Fatalf("%s was not the one evicted", names[0])
	}
	if n := deployment.CachedProjects(a.backend); n != 2 {
		t.Fatalf("%d projects cached, want the bound, 2", n)
	}
}
