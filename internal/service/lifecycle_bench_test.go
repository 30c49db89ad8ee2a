package service_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
)

// BenchmarkSpawnLifecycle measures full lifecycles (assume → dismiss
// callback with the request id) by one caller, in-process on a real
// SQLite file, beside the floor: the same two conditional commits written
// by hand (lifecycleFloor). One run prints both and the ratio; -count N
// interleaves them.
func BenchmarkSpawnLifecycle(b *testing.B) {
	var floor, dont lifecycleResult
	b.Run("floor", func(b *testing.B) {
		f := newLifecycleFloor(b)
		e := f.entity(b)
		floor = measureLifecycles(b, func() error { return f.lifecycle(e) })
	})
	b.Run("dont", func(b *testing.B) {
		svc := benchService(b)
		id := benchClaim(b, svc)
		dont = measureLifecycles(b, func() error { return dontLifecycle(ctx, svc, id) })
	})
	// As under dont serve, where every call's context can be cancelled
	// (not in the ratio).
	b.Run("dont-cancellable-ctx", func(b *testing.B) {
		svc := benchService(b)
		id := benchClaim(b, svc)
		c, cancel := context.WithCancel(ctx)
		defer cancel()
		measureLifecycles(b, func() error { return dontLifecycle(c, svc, id) })
	})
	printRatio("SpawnLifecycle", floor, dont)
}

// BenchmarkSpawnLifecycleParallel is BenchmarkSpawnLifecycle with
// GOMAXPROCS callers at once, each on its own claim, floor beside it.
func BenchmarkSpawnLifecycleParallel(b *testing.B) {
	benchParallelLifecycles(b, "SpawnLifecycleParallel", 1)
}

// BenchmarkSpawnLifecycleParallel16 is it with 16 callers at once, as
// dont serve's default workers (bench/serveload): 16 subagents of one
// harness, each on its own claim.
func BenchmarkSpawnLifecycleParallel16(b *testing.B) {
	benchParallelLifecycles(b, "SpawnLifecycleParallel16", max(1, 16/runtime.GOMAXPROCS(0)))
}

// benchParallelLifecycles runs GOMAXPROCS×parallelism callers, floor and dont.
func benchParallelLifecycles(b *testing.B, name string, parallelism int) {
	var floor, dont lifecycleResult
	b.Run("floor", func(b *testing.B) {
		f := newLifecycleFloor(b)
		b.SetParallelism(parallelism)
		floor = measureParallel(b, func() func() error {
			e := f.entity(b)
			return func() error { return f.lifecycle(e) }
		})
	})
	b.Run("dont", func(b *testing.B) {
		svc := benchService(b)
		b.SetParallelism(parallelism)
		dont = measureParallel(b, func() func() error {
			id := benchClaim(b, svc)
			return func() error { return dontLifecycle(ctx, svc, id) }
		})
	})
	printRatio(name, floor, dont)
}

func benchService(b *testing.B) *service.Service {
	st, err := sqlite.Create(context.Background(), filepath.Join(b.TempDir(), "dont.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, SpawnTimeout: time.Hour})
}

func benchClaim(b *testing.B, svc *service.Service) string {
	res, err := call(svc, "conclude", map[string]any{"statement": "bench claim"})
	if err != nil {
		b.Fatal(err)
	}
	return res.Data.(service.EntityView).ID
}

// dontLifecycle is one lifecycle through the tool surface, as a harness
// runs it: the assume, then the subagent's callback with the request id.
func dontLifecycle(c context.Context, svc *service.Service, id string) error {
	r, err := tools.Call(c, svc, "assume", map[string]any{"id": id, "mode": string(spawn.ModeHarness)})
	if err != nil {
		return err
	}
	_, err = tools.Call(c, svc, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/x"}, "request_id": requestID(r)})
	return err
}

type lifecycleResult struct {
	nsPer, cpuPer float64 // wall and CPU time per lifecycle
}

func (r lifecycleResult) ok() bool { return r.nsPer > 0 }

func measureLifecycles(b *testing.B, one func() error) lifecycleResult {
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := one(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	return reportLifecycles(b, cpuTime()-cpu0)
}

func measureParallel(b *testing.B, setup func() func() error) lifecycleResult {
	var mu sync.Mutex
	var failed atomic.Bool
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		one := setup()
		mu.Unlock()
		for pb.Next() {
			if err := one(); err != nil {
				if !failed.Swap(true) {
					b.Error(err)
				}
				return
			}
		}
	})
	b.StopTimer()
	return reportLifecycles(b, cpuTime()-cpu0)
}

func reportLifecycles(b *testing.B, cpu time.Duration) lifecycleResult {
	r := lifecycleResult{nsPer: float64(b.Elapsed().Nanoseconds()) / float64(b.N), cpuPer: float64(cpu.Nanoseconds()) / float64(b.N)}
	b.ReportMetric(1e9/r.nsPer, "lifecycles/s")
	if cpu > 0 {
		b.ReportMetric(r.cpuPer/1e3, "cpu-µs/lifecycle")
	}
	return r
}

// printRatio prints the line bench/run reads: dont's throughput over the floor's.
func printRatio(name string, floor, dont lifecycleResult) {
	if !floor.ok() || !dont.ok() {
		return
	}
	fmt.Printf("ratio dont/floor %s %.2f (dont %.0f/s %.0f cpu-µs, floor %.0f/s %.0f cpu-µs)\n", name,
		floor.nsPer/dont.nsPer, 1e9/dont.nsPer, dont.cpuPer/1e3, 1e9/floor.nsPer, floor.cpuPer/1e3)
}

// lifecycleFloor is the same durable work as a lifecycle, the simplest
// way on the same driver: the store's schema in a real file, the store's
// pragmas (WAL, synchronous=FULL, busy timeout, immediate transactions),
// statements prepared once on the *sql.DB, writers queued on a mutex, and
// the two conditional commits a lifecycle makes — the assume's (the
// entity conditioned on its version, a pending spawn, its event) and the
// callback's (the spawn resolved conditioned on still pending with its
// expiry, the entity conditioned on its version, two events) — with
// documents of the sizes dont writes. It reads nothing and encodes no JSON.
type lifecycleFloor struct {
	db                                                   *sql.DB
	mu                                                   sync.Mutex
	insEntity, updEntity, insSpawn, resolveSpawn, insEvt *sql.Stmt
	entityDoc, spawnDoc, request, evDoc                  []byte
}

type floorEntity struct {
	id      string
	version int64
}

func newLifecycleFloor(b testing.TB) *lifecycleFloor {
	return newLifecycleFloorAt(b, sqlite.SynchronousFull)
}

// newLifecycleFloorAt is the floor at a synchronous setting of its own
// (BenchmarkSpawnLifecycleDurability).
func newLifecycleFloorAt(b testing.TB, synchronous sqlite.Synchronous) *lifecycleFloor {
	path := filepath.Join(b.TempDir(), "dont.db")
	st, err := sqlite.Create(context.Background(), path) // the same schema
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	// The DSN of sqlite.Open, less its journal_size_limit (which bounds the
	// WAL file's size on disk, not what a commit makes durable).
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(10000)&_pragma=synchronous("+string(synchronous)+")&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	var mode string
	var sync int
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		b.Fatalf("journal_mode %q: %v", mode, err)
	}
	if err := db.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != map[sqlite.Synchronous]int{sqlite.SynchronousNormal: 1, sqlite.SynchronousFull: 2}[synchronous] {
		b.Fatalf("synchronous %d: %v", sync, err)
	}
	f := &lifecycleFloor{db: db,
		entityDoc: bytes.Repeat([]byte("e"), 254), spawnDoc: bytes.Repeat([]byte("s"), 368),
		request: bytes.Repeat([]byte("r"), 949), evDoc: bytes.Repeat([]byte("v"), 280)}
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{
		{&f.insEntity, "INSERT INTO entities(id, kind, status, version, doc) VALUES(?,'claim','unverified',1,?)"},
		{&f.updEntity, "UPDATE entities SET status = ?, version = ?, doc = ? WHERE id = ? AND version = ?"},
		{&f.insSpawn, "INSERT INTO spawns(id, entity_id, state, issued_at, expires_at, doc, request) VALUES(?,?,'pending',?,?,?,?) ON CONFLICT(id) DO NOTHING"},
		{&f.resolveSpawn, "UPDATE spawns SET state = 'resolved', expires_at = ?, doc = ?, request = COALESCE(?, request) WHERE id = ? AND state = 'pending' AND expires_at = ?"},
		{&f.insEvt, "INSERT INTO events(id, entity_id, request_id, kind, doc) VALUES(?,?,?,?,?)"},
	} {
		if *p.st, err = db.Prepare(p.q); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

func (f *lifecycleFloor) entity(b testing.TB) *floorEntity {
	e := &floorEntity{id: ids.New(ids.Claim, time.Now()), version: 1}
	if _, err := f.insEntity.Exec(e.id, f.entityDoc); err != nil {
		b.Fatal(err)
	}
	return e
}

func (f *lifecycleFloor) lifecycle(e *floorEntity) error {
	now := time.Now()
	sid := ids.New(ids.Spawn, now)
	exp := now.Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000000000Z")
	if err := f.commit(func(tx *sql.Tx) error {
		if err := one(tx.Stmt(f.updEntity).Exec("unverified", e.version+1, f.entityDoc, e.id, e.version)); err != nil {
			return err
		}
		if err := one(tx.Stmt(f.insSpawn).Exec(sid, e.id, now.UTC().Format("2006-01-02T15:04:05.000000000Z"), exp, f.spawnDoc, f.request)); err != nil {
			return err
		}
		return one(tx.Stmt(f.insEvt).Exec(ids.New(ids.Event, now), e.id, sid, "spawn_requested", f.evDoc))
	}); err != nil {
		return err
	}
	e.version++
	if err := f.commit(func(tx *sql.Tx) error {
		if err := one(tx.Stmt(f.resolveSpawn).Exec(exp, f.spawnDoc, nil, sid, exp)); err != nil {
			return err
		}
		if err := one(tx.Stmt(f.updEntity).Exec("verified", e.version+1, f.entityDoc, e.id, e.version)); err != nil {
			return err
		}
		if err := one(tx.Stmt(f.insEvt).Exec(ids.New(ids.Event, now), e.id, sid, "dismissed", f.evDoc)); err != nil {
			return err
		}
		return one(tx.Stmt(f.insEvt).Exec(ids.New(ids.Event, now), e.id, sid, "spawn_resolved", f.evDoc))
	}); err != nil {
		return err
	}
	e.version++
	return nil
}

func (f *lifecycleFloor) commit(fn func(*sql.Tx) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	tx, err := f.db.Begin()
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback() //nolint:errcheck // the error is fn's
		return err
	}
	return tx.Commit()
}

// one checks a conditional write's condition: exactly one row.
func one(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("condition failed (%d rows): %v", n, err)
	}
	return nil
}

// BenchmarkSpawnLifecycleInterleaved runs the floor and dont in
// alternating short phases of the same work (each phase a few dozen
// lifecycles by the given number of concurrent callers, each on its own
// claim) and sums each side's wall and CPU time over the phases: on a
// shared machine whose load moves from second to second, both sides see
// the same load, where the floor/dont sub-benchmarks above run a second
// or more apart. b.N is the lifecycles of each side.
func BenchmarkSpawnLifecycleInterleaved(b *testing.B) {
	for _, callers := range []int{1, 2, 16} {
		name := fmt.Sprintf("callers=%d", callers)
		var floorLast, dontLast lifecycleResult
		b.Run(name, func(b *testing.B) {
			f := newLifecycleFloor(b)
			svc := benchService(b)
			floorOnes, dontOnes := make([]func() error, callers), make([]func() error, callers)
			for i := range callers {
				e, id := f.entity(b), benchClaim(b, svc)
				floorOnes[i] = func() error { return f.lifecycle(e) }
				dontOnes[i] = func() error { return dontLifecycle(ctx, svc, id) }
			}
			phase := max(64, 8*callers)
			var floor, dont phaseTotals
			b.ResetTimer()
			for done := 0; done < b.N; {
				k := min(phase, b.N-done)
				floor.add(b, floorOnes, k)
				dont.add(b, dontOnes, k)
				done += k
			}
			b.StopTimer()
			n := float64(b.N)
			fr := lifecycleResult{nsPer: float64(floor.wall.Nanoseconds()) / n, cpuPer: float64(floor.cpu.Nanoseconds()) / n}
			dr := lifecycleResult{nsPer: float64(dont.wall.Nanoseconds()) / n, cpuPer: float64(dont.cpu.Nanoseconds()) / n}
			b.ReportMetric(1e9/fr.nsPer, "floor-lifecycles/s")
			b.ReportMetric(1e9/dr.nsPer, "dont-lifecycles/s")
			b.ReportMetric(fr.nsPer/dr.nsPer, "dont/floor")
			floorLast, dontLast = fr, dr
		})
		printRatio("SpawnLifecycleInterleaved/"+name, floorLast, dontLast) // the last run's, not the ramp-up's
	}
}

// phaseTotals sums one side's wall and CPU time over its phases.
type phaseTotals struct{ wall, cpu time.Duration }

// add runs k lifecycles spread over the callers, all at once.
func (p *phaseTotals) add(b *testing.B, ones []func() error, k int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	cpu0, t0 := cpuTime(), time.Now()
	for _, one := range ones {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(k) {
				if err := one(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	p.wall += time.Since(t0)
	p.cpu += cpuTime() - cpu0
}
