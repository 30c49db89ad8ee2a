package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
)

func requestID(r tools.Output) string {
	raw := r.Data.(json.RawMessage)
	i := len(`{"request_id":"`)
	return string(raw[i : i+len("spawn:")+26]) // not the whole payload

}

// BenchmarkSweep times one sweep over a store holding many pending spawns,
// some expired: its cost follows the expired, not the stored.
func BenchmarkSweep(b *testing.B) {
	for _, c := range []struct{ stored, expired int }{{10_000, 100}, {100_000, 100}, {100_000, 1000}} {
		stored, expired := c.stored, c.expired
		b.Run(fmt.Sprintf("stored=%d/expired=%d", stored, expired), func(b *testing.B) {
			st, err := sqlite.Create(context.Background(), filepath.Join(b.TempDir(), "dont.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
			svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Clock: func() time.Time { return now }})
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				seed(b, st, now, stored, expired, i)
				b.StartTimer()
				rep, err := svc.Sweep(ctx, expired)
				b.StopTimer()
				if err != nil || len(rep.TimedOut) != expired {
					b.Fatalf("swept %d of %d: %v", len(rep.TimedOut), expired, err)
				}
			}
			b.ReportMetric(float64(expired), "expired/op")
		})
	}
}

// seed tops the store up to `stored` pending guess spawns, `expired` of them due.
func seed(b *testing.B, st *sqlite.Store, now time.Time, stored, expired, round int) {
	var tx store.Tx
	flush := func() {
		if err := st.Commit(ctx, tx); err != nil {
			b.Fatal(err)
		}
		tx = store.Tx{}
	}
	total := expired
	if round == 0 {
		total = stored
	}
	for i := 0; i < total; i++ {
		exp := now.Add(time.Hour)
		if i < expired {
			exp = now.Add(-time.Minute)
		}
		tx.Spawns = append(tx.Spawns, store.SpawnPut{Create: true, Spawn: spawn.Spawn{ID: ids.New(ids.Spawn, now), Kind: spawn.Guess,
			State: spawn.Pending, IssuedAt: now, ExpiresAt: exp, Request: []byte("{}")}})
		if len(tx.Spawns) == 1000 {
			flush()
		}
	}
	flush()
}
