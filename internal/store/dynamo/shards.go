package dynamo

import (
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"sync"
)

// DefaultPendingShards is how many index partitions a project's pending
// spawns are spread over when neither the process's DONT_PENDING_SHARDS
// (EnvPendingShards) nor SetPendingShards says otherwise. Each shard is a
// partition of the pending_expiry index (about 1,000 index writes a
// second, two a lifecycle), and every sweep reads every shard (half a
// read unit each when nothing is due); one partition already outruns the
// project's entity partition, which caps a project first (docs/aws.md,
// "Limits and scale").
const DefaultPendingShards = 1

// EnvPendingShards names the variable that sets the shard count of every
// store a process opens (1 to MaxPendingShards): infra/stack sets it on
// every function from dont:pendingShards, so that the writers and the
// sweepers of one deployment agree.
const EnvPendingShards = "DONT_PENDING_SHARDS"

// ParsePendingShards reads a shard count as EnvPendingShards holds it;
// empty is DefaultPendingShards.
func ParsePendingShards(v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultPendingShards, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPendingShards {
		return 0, fmt.Errorf("%s must be a whole number from 1 to %d, got %q", EnvPendingShards, MaxPendingShards, v)
	}
	return n, nil
}

// processShards is the process's shard count: EnvPendingShards, read
// once (the functions check it at init, deployment.ConfigFromEnv; a value
// it refuses never gets this far).
var processShards = sync.OnceValue(func() int {
	n, err := ParsePendingShards(os.Getenv(EnvPendingShards))
	if err != nil {
		return DefaultPendingShards
	}
	return n
})

// MaxPendingShards bounds SetPendingShards: a sweep queries every shard.
const MaxPendingShards = 64

// SetPendingShards sets how many index partitions this store spreads the
// project's pending spawns over (1 to MaxPendingShards). A spawn's shard
// follows from its id, so every writer and sweeper of one deployment
// must use the same count; it may be raised at any time (items stay in
// the shard they were written to, which every sweep still reads), and
// lowered only once no pending spawn is left in the shards it drops.
func (s *Store) SetPendingShards(n int) error {
	if n < 1 || n > MaxPendingShards {
		return fmt.Errorf("dynamo: pending shards %d: want 1 to %d", n, MaxPendingShards)
	}
	s.shards = n
	return nil
}

// PendingShards is the number of index partitions the store sweeps.
func (s *Store) PendingShards() int { return max(s.shards, 1) }

// pendingShard is the shard of spawn id: FNV-1a of the id, modulo the
// shard count, so that the write that puts a spawn in the index and a
// later sweep agree without reading anything.
func (s *Store) pendingShard(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(s.PendingShards()))
}

// pendingPK is the index partition of this project's pending spawn id:
// shard 0 is P#<p>#S, the key of every pending spawn before the index
// was sharded (so that those are still swept), shard n > 0 P#<p>#S#<n>.
func (s *Store) pendingPK(id string) string { return s.pendingShardPK(s.pendingShard(id)) }

func (s *Store) pendingShardPK(n int) string {
	if n == 0 {
		return s.spawnPK()
	}
	return s.spawnPK() + "#" + strconv.Itoa(n)
}
