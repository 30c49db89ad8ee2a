package sqlite

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// entityCopy and spawnCopy copy every list and pointer of their types by
// name: a field added to either must be added there too (or a known value
// would share it with its caller, or keep an empty list a read returns
// as nil).
func TestWhatAStoreKnowsCopiesEveryListAndPointer(t *testing.T) {
	for typ, handled := range map[reflect.Type][]string{
		reflect.TypeFor[ledger.Entity](): {"Atoms", "Refs", "Confidence", "DependsOn"},
		reflect.TypeFor[spawn.Spawn]():   {"Temperature", "ResolvedAt", "Request"},
	} {
		var refs []string
		for f := range typ.Fields() {
			switch f.Type.Kind() {
			case reflect.Slice, reflect.Pointer, reflect.Map, reflect.Interface, reflect.Struct, reflect.Array:
				if f.Type == reflect.TypeFor[time.Time]() {
					continue
				}
				refs = append(refs, f.Name)
			}
		}
		if !reflect.DeepEqual(refs, handled) {
			t.Errorf("%s has fields %v beyond its plain values; known.go copies %v", typ, refs, handled)
		}
	}
}

// A probe that finds nothing due learns when something next will be, and
// the next probe before then reads nothing; a Commit's pending spawn
// moves that time earlier.
func TestAProbeThatFindsNothingDueLearnsWhenSomethingWillBe(t *testing.T) {
	ctx := context.Background()
	s, err := Create(ctx, filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	sp := spawn.Spawn{ID: "spawn:01", Kind: spawn.Guess, State: spawn.Pending, IssuedAt: now, ExpiresAt: now.Add(time.Hour), Request: []byte("{}")}
	if err := s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: sp, Create: true}}}); err != nil {
		t.Fatal(err)
	}
	if due, err := s.AnythingDue(ctx, now); err != nil || due {
		t.Fatalf("due %v %v", due, err)
	}
	if !s.kn.dueSet || s.kn.nextSpawn.String != timeText(sp.ExpiresAt) || s.kn.nextQuestion.Valid {
		t.Fatalf("after the probe: known %v, next spawn %v, next question %v", s.kn.dueSet, s.kn.nextSpawn, s.kn.nextQuestion)
	}
	sooner := sp
	sooner.ID, sooner.ExpiresAt = "spawn:02", now.Add(time.Minute)
	if err := s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: sooner, Create: true}}}); err != nil {
		t.Fatal(err)
	}
	if !s.kn.dueSet || s.kn.nextSpawn.String != timeText(sooner.ExpiresAt) {
		t.Fatalf("after a sooner spawn: known %v, next spawn %v", s.kn.dueSet, s.kn.nextSpawn)
	}
	if due, err := s.AnythingDue(ctx, now.Add(time.Minute)); err != nil || !due {
		t.Fatalf("at the sooner expiry: due %v %v", due, err)
	}
}
