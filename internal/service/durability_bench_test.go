package service_test

import (
	"context"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"path/filepath"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// BenchmarkSpawnLifecycleDurability is what synchronous=FULL (a commit
// is durable when acknowledged: the store's setting) costs against
// NORMAL (durable at the next checkpoint), in one run: the floor and
// dont at each setting, one caller. It prints dont/floor at each setting
// and FULL/NORMAL for each (docs/design.md#storage-health).
func BenchmarkSpawnLifecycleDurability(b *testing.B) {
	results := map[string]lifecycleResult{}
	for _, sync := range []sqlite.Synchronous{sqlite.SynchronousNormal, sqlite.SynchronousFull} {
		b.Run("floor-"+string(sync), func(b *testing.B) {
			f := newLifecycleFloorAt(b, sync)
			e := f.entity(b)
			results["floor-"+string(sync)] = measureLifecycles(b, func() error { return f.lifecycle(e) })
		})
		b.Run("dont-"+string(sync), func(b *testing.B) {
			svc := benchServiceAt(b, sync)
			id := benchClaim(b, svc)
			results["dont-"+string(sync)] = measureLifecycles(b, func() error { return dontLifecycle(ctx, svc, id) })
		})
	}
	for _, sync := range []sqlite.Synchronous{sqlite.SynchronousNormal, sqlite.SynchronousFull} {
		printRatio("SpawnLifecycle-"+string(sync), results["floor-"+string(sync)], results["dont-"+string(sync)])
	}
	for _, who := range []string{"floor", "dont"} {
		normal, full := results[who+"-NORMAL"], results[who+"-FULL"]
		if normal.ok() && full.ok() {
			fmt.Printf("durability %s FULL/NORMAL lifecycles/s %.2f (FULL %.0f/s, NORMAL %.0f/s)\n", who,
				normal.nsPer/full.nsPer, 1e9/full.nsPer, 1e9/normal.nsPer)
		}
	}
}

// benchServiceAt is benchService on a store at the given setting.
func benchServiceAt(b *testing.B, sync sqlite.Synchronous) *service.Service {
	path := filepath.Join(b.TempDir(), "dont.db")
	st, err := sqlite.Create(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	if st, err = sqlite.OpenSynchronous(path, sync); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, SpawnTimeout: time.Hour})
}
