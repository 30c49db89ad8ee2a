package sqlite

import (
	"fmt"

	"github.com/dont-cli/dont/internal/errs"
)

// DiskReserve is the free space a write leaves on the store's disk: every
// write is refused (disk-nearly-full) while less is free, before it
// begins, so the disk never fills under the store. A full disk fails a
// WAL append or a checkpoint half-way, and a WAL that cannot be
// checkpointed into the database only grows; with the reserve, reads,
// `dont doctor` and the checkpoints that shrink the WAL keep working, and
// writes resume by themselves once space is freed. 64 MiB is above what
// one WAL reaches (walSizeLimit, 20 MiB) plus a checkpoint's growth of
// the database file (TestWritesStopBeforeTheDiskIsFullAndResumeWhenSpaceReturns).
const DiskReserve = 64 << 20

// roomToWrite refuses a write while the store's disk has less than
// DiskReserve free. One statfs per batch of writes (writeconn.go).
func (s *Store) roomToWrite() error {
	free, err := s.freeSpace()
	if err != nil || free >= DiskReserve {
		return nil // a disk that cannot say is not refused: SQLite reports a real failure
	}
	return errs.E(errs.DiskNearlyFull, fmt.Sprintf("the disk of %s has %d MiB free, less than the %d MiB dont keeps in reserve; nothing was written",
		s.dir, free>>20, DiskReserve>>20)).Unmet(fmt.Sprintf("at least %d MiB free on the store's disk", DiskReserve>>20))
}

func (s *Store) freeSpace() (uint64, error) {
	if s.Hooks.FreeSpace != nil {
		return s.Hooks.FreeSpace()
	}
	if s.dir == "" {
		return DiskReserve, nil
	}
	return diskFree(s.dir)
}
