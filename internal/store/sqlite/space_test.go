package sqlite_test

import (
	"github.com/dont-cli/dont/internal/tools"
	"sync/atomic"
	"testing"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// A disk with less free than the reserve refuses every write before it
// begins (disk-nearly-full, nothing written) while reads and the check
// go on; when space returns, writes resume with no restart.
func TestWritesStopBeforeTheDiskIsFullAndResumeWhenSpaceReturns(t *testing.T) {
	s := newStore(t)
	var free atomic.Uint64
	free.Store(1 << 40)
	s.Hooks.FreeSpace = func() (uint64, error) { return free.Load(), nil }
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s})
	kept, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "written while the disk had room"})
	if err != nil {
		t.Fatal(err)
	}
	free.Store(sqlite.DiskReserve - 1)
	if _, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "written on a nearly full disk"}); !errs.Is(err, errs.DiskNearlyFull) {
		t.Fatalf("a write on a nearly full disk: %v; want disk-nearly-full", err)
	}
	if _, err := svc.Ledger.Define(ctx, "ex:Full", "a term", nil); !errs.Is(err, errs.DiskNearlyFull) {
		t.Fatalf("a define on a nearly full disk: %v; want disk-nearly-full", err)
	}
	if v, err := svc.Ledger.Show(ctx, kept.ID, false); err != nil || v.ID != kept.ID {
		t.Fatalf("a read on a nearly full disk: %v %v", v.ID, err)
	}
	if problems, err := s.Check(ctx, false); err != nil || len(problems) > 0 {
		t.Fatalf("the check on a nearly full disk: %v %v", problems, err)
	}
	events, err := s.AllEvents(ctx)
	if err != nil || len(events) != 1 {
		t.Fatalf("events after the refused writes: %d, %v; want the 1 written before", len(events), err)
	}
	free.Store(sqlite.DiskReserve)
	if _, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "written once space returned"}); err != nil {
		t.Fatalf("a write once space returned: %v", err)
	}
}
