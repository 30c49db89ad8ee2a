package dynamo_test

import (
	"bytes"
	"encoding/json"
	"github.com/dont-cli/dont/internal/tools"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// entityPutHook is an http.RoundTripper that, once armed, takes the next
// PutItem of an entity item that names a pending spawn (the write that
// issues a spawn on an existing entity): it forwards it (commit) or not
// (a reset before sending), runs between on the spawn's id — another
// client's write landing before the retry — and then resets the
// connection, so the store never hears the answer and retries.
type entityPutHook struct {
	next    http.RoundTripper
	forward bool
	between func(spawnID string)

	mu    sync.Mutex
	armed bool
	fired int
}

func (h *entityPutHook) arm() { h.mu.Lock(); h.armed = true; h.mu.Unlock() }

func (h *entityPutHook) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".PutItem") {
		return h.next.RoundTrip(r)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in struct {
		Item map[string]map[string]string
	}
	json.Unmarshal(body, &in)
	ps := in.Item["ps"]["S"]
	h.mu.Lock()
	take := h.armed && ps != "" && strings.HasSuffix(in.Item["pk"]["S"], "#E")
	if take {
		h.armed = false
		h.fired++
	}
	h.mu.Unlock()
	if !take {
		return h.next.RoundTrip(r)
	}
	if h.forward {
		resp, err := h.next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return resp, nil
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	h.between(ps)
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

// lostIssue is a project seen by two services: svc, whose store's entity
// puts go through hook, and other, another client with a store of its own.
func lostIssue(t *testing.T, forward bool, between func(other *service.Service, entityID, spawnID string)) (svc *service.Service, ost *dynamo.Store, entityID string, hook *entityPutHook) {
	t.Helper()
	needServer(t)
	project := "test-" + randomName()
	now := t0
	clock := func() time.Time { return now }
	hook = &entityPutHook{next: http.DefaultTransport, forward: forward}
	st := dynamo.New(newClient(hook, nil), table, project)
	dynamo.SetRetry(st, 8, time.Millisecond, 20*time.Millisecond)
	svc = service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: project, Clock: clock, SpawnTimeout: time.Hour})
	ost = dynamo.New(newClient(nil, nil), table, project)
	other := service.New(service.Deps{ToolNames: tools.Names(), Store: ost, Confirmations: ost, Tokens: ost, Project: project, Clock: clock, SpawnTimeout: time.Hour})
	dep, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "the barometer read 1 atm"})
	if err != nil {
		t.Fatal(err)
	}
	// It depends on dep, so that doubting dep moves it (stale) beside its
	// pending spawn, as no direct move by an agent may (docs/design.md §5.3).
	res, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "water boils at 100 C at sea level", DependsOn: []string{dep.ID}})
	if err != nil {
		t.Fatal(err)
	}
	entityID = res.ID
	hook.between = func(spawnID string) { between(other, entityID, spawnID) }
	hook.arm()
	return svc, ost, entityID, hook
}

// requestedEvents counts the entity's spawn_requested events.
func requestedEvents(t *testing.T, st store.Store, id string) int {
	t.Helper()
	evs, err := st.Events(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Kind == ledger.EvSpawnRequested {
			n++
		}
	}
	return n
}

// The flake of the dynamo-faults linearizability run: the put that issues
// the spawn commits, its answer is lost, another client moves the entity
// (the spawn stays pending) before the store's retry, and the retry's
// item no longer matches the stored one.
func TestAnAssumeWhoseCommittedResponseWasLostIsAnsweredWithItsOwnSpawnNotSpawnPending(t *testing.T) {
	svc, ost, id, hook := lostIssue(t, true, func(other *service.Service, entityID, _ string) {
		e, err := other.Store.GetEntity(ctx, entityID)
		if err != nil || len(e.DependsOn) == 0 {
			t.Errorf("the entity under review: %+v %v", e, err)
			return
		}
		// Its dependency is doubted: the entity goes stale, its spawn stays pending.
		if _, _, err := other.Ledger.Transition(ctx, service.TransitionInput{Action: ledger.Doubt, EntityID: e.DependsOn[0], Reason: "ITS-90 says 99.97 C"}); err != nil {
			t.Errorf("the move between the lost answer and the retry: %v", err)
		}
	})
	r, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: id})
	if err != nil {
		t.Fatalf("assume whose committed answer was lost: %v (code %s); want its own spawn", err, errs.As(err).Code)
	}
	if hook.fired != 1 {
		t.Fatalf("the lost answer was injected %d times, want 1", hook.fired)
	}
	e, err := ost.GetEntity(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if e.PendingSpawn != r.Spawn.ID {
		t.Fatalf("assume answered spawn %s, but %s is pending on the entity", r.Spawn.ID, e.PendingSpawn)
	}
	if e.Status != ledger.Stale {
		t.Fatalf("entity %s, want stale (the other client's move stays)", e.Status)
	}
	if n := requestedEvents(t, ost, id); n != 1 {
		t.Fatalf("%d spawn_requested events, want 1: the retry issued nothing", n)
	}
}

// The same, but the spawn is resolved (cancelled by another client that
// learned its id) before the retry: the retry still recognises the spawn
// as its own, by the history item of its resolution.
func TestAnAssumeWhoseCommittedResponseWasLostAndWhoseSpawnEndedIsAnsweredWithItsOwnSpawn(t *testing.T) {
	svc, ost, id, _ := lostIssue(t, true, func(other *service.Service, _, spawnID string) {
		if _, _, err := other.Spawns.Cancel(ctx, spawnID, "superseded", nil); err != nil {
			t.Errorf("the cancel between the lost answer and the retry: %v", err)
		}
	})
	r, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: id})
	if err != nil {
		t.Fatalf("assume whose committed answer was lost: %v; want its own spawn", err)
	}
	sp, err := ost.GetSpawn(ctx, r.Spawn.ID)
	if err != nil || sp.State != spawn.Resolved || sp.Outcome != spawn.Cancelled {
		t.Fatalf("the answered spawn %s: %s %s %v; want the one the other client cancelled", r.Spawn.ID, sp.State, sp.Outcome, err)
	}
	if e, _ := ost.GetEntity(ctx, id); e.PendingSpawn != "" {
		t.Fatalf("spawn %s pending after the cancel: the retry issued a second spawn", e.PendingSpawn)
	}
	if n := requestedEvents(t, ost, id); n != 1 {
		t.Fatalf("%d spawn_requested events, want 1", n)
	}
}

// A put that never reached the server is not mistaken for a commit: when
// the entity moved before the retry, the assume re-reads it and issues a
// spawn of its own (exactly one).
func TestAnAssumeWhosePutNeverLandedIssuesOneFreshSpawnAfterTheEntityMoved(t *testing.T) {
	var lost string
	svc, ost, id, _ := lostIssue(t, false, func(other *service.Service, entityID, spawnID string) {
		lost = spawnID
		if _, _, err := other.Ledger.Transition(ctx, service.TransitionInput{Action: ledger.Doubt, EntityID: entityID, Reason: "ITS-90 says 99.97 C"}); err != nil {
			t.Errorf("the move before the retry: %v", err)
		}
	})
	r, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: id})
	if err != nil {
		t.Fatalf("assume after a reset before sending: %v", err)
	}
	if r.Spawn.ID == lost {
		t.Fatalf("assume answered spawn %s, whose put never landed", lost)
	}
	if e, _ := ost.GetEntity(ctx, id); e.PendingSpawn != r.Spawn.ID {
		t.Fatalf("pending %s, want the answered %s", e.PendingSpawn, r.Spawn.ID)
	}
	if _, err := ost.GetSpawn(ctx, lost); err == nil {
		t.Fatalf("the spawn whose put never landed exists")
	}
	if n := requestedEvents(t, ost, id); n != 1 {
		t.Fatalf("%d spawn_requested events, want 1", n)
	}
}
