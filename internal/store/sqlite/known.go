package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// What a Store knows of the database without reading it: the entities and
// spawns it last wrote or read, the live webhook subscriptions, and when
// the sweep's probe next finds something due. It is worth knowing only
// while no other connection has committed, and SQLite's supported signal
// tells: the write connection's PRAGMA data_version changes whenever
// another connection, of this process or another, has committed, and
// never with the connection's own commits. So what is known is kept with
// the data_version it describes, and a read that finds another forgets it
// all and reads the database.
//
// Everything here is guarded by writeMu, as the write connection is: a
// lookup runs where a short read would (onWriteConn), and a write checks
// data_version right after its BEGIN IMMEDIATE, when no other connection
// can be committing. A Commit's write says what it wrote (learn), applied
// after its COMMIT; what is known stays valid only if data_version, read
// again after the COMMIT, has not moved, for the COMMIT released the lock
// and another process's writer may already have committed
// (TestAnotherProcessesCommitWhileAStoreEndsItsOwnIsSeenByItsNextRead).
// Any other write makes the Store forget everything as it starts (what
// it changes is not modelled here), and a failed transaction does too.
//
// Values are kept as a read of their documents returns them (the
// documents' JSON round trip: empty lists as nil, times in UTC) and
// copied out, so no caller shares them; a value that would not come back
// the same (a string that is not UTF-8, a time with an offset) is not
// kept.
type known struct {
	// dataVersion is the write connection's PRAGMA data_version of the
	// state below, when valid.
	dataVersion int64
	valid       bool
	// entities and spawns by id, each at most knownMax.
	entities map[string]ledger.Entity
	spawns   map[string]spawn.Spawn
	// liveHooks are the hooks table's live subscriptions (hooksSet).
	liveHooks []hooks.Hook
	hooksSet  bool
	// due: the earliest expiry of a pending spawn and deadline of a
	// pending question (empty when none), and no question's ending left
	// to announce, when dueSet. Text as stored, compared as the probe
	// compares.
	dueSet                  bool
	nextSpawn, nextQuestion sql.NullString
}

// knownMax bounds the entities and the spawns kept: a few per caller
// writing at once is the working set (each lifecycle re-reads its own
// entity and spawn); 512 kept mostly resolved spawns nobody reads again,
// 1–1.6 MB of `dont serve`'s max RSS under bench/serveload for no
// throughput (bench/results/report.md).
const knownMax = 64

// knownState reports whether what is known describes the database now,
// first forgetting it if another connection has committed since. The
// caller holds writeMu.
func (s *Store) knownState() bool {
	dv, ok := s.readDataVersion()
	if !ok {
		s.forgetKnown()
		s.kn.valid = false
		return false
	}
	if !s.kn.valid || dv != s.kn.dataVersion {
		s.forgetKnown()
		s.kn.dataVersion, s.kn.valid = dv, true
	}
	return true
}

// forgetKnown drops everything known; the caller holds writeMu.
func (s *Store) forgetKnown() {
	clear(s.kn.entities)
	clear(s.kn.spawns)
	s.kn.liveHooks, s.kn.hooksSet = nil, false
	s.kn.dueSet = false
}

// afterBatch brings what is known past a batch's transaction: err is the
// transaction's. The caller holds writeMu.
func (s *Store) afterBatch(batch []*queuedWrite, err error) {
	if err != nil {
		s.forgetKnown()
		s.kn.valid = false
		return
	}
	for _, w := range batch {
		if w.learn == nil {
			// Even one rolled back to its savepoint: what it read in the
			// transaction may have been kept (knownHooks).
			s.forgetKnown()
			break
		}
	}
	if s.kn.valid {
		for _, w := range batch {
			if w.err == nil && w.learn != nil {
				w.learn()
			}
		}
	}
	// The COMMIT released the write lock, so another connection may have
	// committed since: what is known stays valid only if the write
	// connection's data_version is still the one read inside the
	// transaction (knownState, after BEGIN IMMEDIATE; it moves with every
	// other connection's commit, never with this one's own).
	if dv, ok := s.readDataVersion(); !ok || !s.kn.valid || dv != s.kn.dataVersion {
		s.forgetKnown()
		s.kn.valid = false
	}
}

// readDataVersion reads PRAGMA data_version on the write connection: it
// changes when another connection, of this process or another, has
// committed since this one last read.
func (s *Store) readDataVersion() (int64, bool) {
	if s.wconn == nil {
		return 0, false
	}
	var v int64
	ctx := context.Background()
	var err error
	if st := s.wstmt(ctx, dataVersionQuery); st != nil {
		err = st.QueryRowContext(ctx).Scan(&v)
	} else {
		err = s.wconn.QueryRowContext(ctx, dataVersionQuery).Scan(&v)
	}
	return v, err == nil
}

const dataVersionQuery = "PRAGMA data_version"

// learnOf is what a Commit of t records once committed.
func learnOf(s *Store, t store.Tx) func() {
	return func() {
		for _, p := range t.Entities {
			s.keepEntity(p.Entity)
		}
		for _, p := range t.Spawns {
			s.learnSpawn(p.Spawn, p.Create)
		}
	}
}

// learnSpawn records a spawn a Commit wrote: created, or updated while
// pending (its request column kept when the write had none).
func (s *Store) learnSpawn(sp spawn.Spawn, create bool) {
	if !create && len(sp.Request) == 0 {
		if prev, ok := s.kn.spawns[sp.ID]; ok {
			sp.Request = prev.Request // COALESCE(?, request) kept it
		}
	}
	if len(sp.Request) == 0 {
		delete(s.kn.spawns, sp.ID) // a read would return what is not modelled
	} else {
		s.keepSpawn(sp)
	}
	if s.kn.dueSet && sp.State == spawn.Pending {
		if at := timeText(sp.ExpiresAt); !s.kn.nextSpawn.Valid || at < s.kn.nextSpawn.String {
			s.kn.nextSpawn = sql.NullString{String: at, Valid: true}
		}
	}
}

func (s *Store) keepEntity(e ledger.Entity) {
	c, ok := entityCopy(e, true)
	keep(&s.kn.entities, e.ID, c, ok)
}

func (s *Store) keepSpawn(sp spawn.Spawn) {
	c, ok := spawnCopy(sp, true)
	keep(&s.kn.spawns, sp.ID, c, ok)
}

// keep puts c under id in *m, making room by dropping one other when
// knownMax are kept; a value that would not read back the same (ok
// false) is dropped instead.
func keep[T any](m *map[string]T, id string, c T, ok bool) {
	if !ok {
		delete(*m, id)
		return
	}
	if *m == nil {
		*m = map[string]T{}
	}
	if _, had := (*m)[id]; !had && len(*m) >= knownMax {
		for k := range *m {
			delete(*m, k)
			break
		}
	}
	(*m)[id] = c
}

// getEntity reads one entity: known, or read on the write connection and
// then known. ok is false when the write connection is busy (the caller
// reads on the pool).
func (s *Store) getEntity(ctx context.Context, id string) (e ledger.Entity, err error, ok bool) {
	if !s.onWriteConn() {
		return e, nil, false
	}
	defer s.writeMu.Unlock()
	kn := s.knownState()
	if kn {
		if k, found := s.kn.entities[id]; found {
			e, _ = entityCopy(k, false)
			return e, nil, true
		}
	}
	st := s.wstmt(ctx, entityQuery)
	if st == nil {
		return e, nil, false
	}
	var doc []byte
	if err := st.QueryRowContext(context.WithoutCancel(ctx), id).Scan(&doc); err != nil {
		return e, classify(err), true
	}
	if err := json.Unmarshal(doc, &e); err != nil {
		return e, err, true
	}
	if kn {
		s.keepEntity(e)
	}
	return e, nil, true
}

const entityQuery = "SELECT doc FROM entities WHERE id = ?"

// getSpawn is getEntity for a spawn; a spawn not found is found is false.
func (s *Store) getSpawn(ctx context.Context, id string) (sp spawn.Spawn, found bool, err error, ok bool) {
	if !s.onWriteConn() {
		return sp, false, nil, false
	}
	defer s.writeMu.Unlock()
	kn := s.knownState()
	if kn {
		if k, has := s.kn.spawns[id]; has {
			sp, _ = spawnCopy(k, false)
			return sp, true, nil, true
		}
	}
	st := s.wstmt(ctx, spawnQuery)
	if st == nil {
		return sp, false, nil, false
	}
	var doc, req []byte
	switch err := st.QueryRowContext(context.WithoutCancel(ctx), id).Scan(&doc, &req); err {
	case nil:
	case sql.ErrNoRows:
		return sp, false, nil, true
	default:
		return sp, false, err, true
	}
	if err := json.Unmarshal(doc, &sp); err != nil {
		return spawn.Spawn{}, false, err, true
	}
	sp.Request = req
	if kn && len(req) > 0 {
		s.keepSpawn(sp)
	}
	return sp, true, nil, true
}

const spawnQuery = "SELECT doc, request FROM spawns WHERE id = ?"

// knownHooks are the live subscriptions, read in tx once per known
// state; the caller holds writeMu (tx is the write connection's).
func (s *Store) knownHooks(ctx context.Context, tx *txn) ([]hooks.Hook, error) {
	if s.kn.valid && s.kn.hooksSet {
		return append([]hooks.Hook(nil), s.kn.liveHooks...), nil
	}
	hs, err := txHooks(ctx, tx)
	if err == nil && s.kn.valid {
		s.kn.liveHooks, s.kn.hooksSet = append([]hooks.Hook(nil), hs...), true
	}
	return hs, err
}

// nextDueQuery is what the probe's answer depends on: the earliest expiry
// of a pending spawn, and the earliest deadline of a pending question or
// unsent reminder, each one search of its index.
const nextDueQuery = `SELECT
	(SELECT MIN(expires_at) FROM spawns INDEXED BY spawns_due WHERE state = 'pending'),
	(SELECT MIN(t) FROM (SELECT MIN(deadline) AS t FROM approvals INDEXED BY approvals_due WHERE state = 'pending'
		UNION ALL SELECT MIN(remind_at) FROM approval_reminders INDEXED BY approval_reminders_due))`

// knownDue answers the sweep's probe at at from what is known, learning
// the next due times when nothing is due now. ok is false when it cannot
// answer (the caller probes as before).
func (s *Store) knownDue(ctx context.Context, at string) (due, ok bool) {
	if !s.onWriteConn() {
		return false, false
	}
	defer s.writeMu.Unlock()
	if !s.knownState() {
		return false, false
	}
	if !s.kn.dueSet || !before(at, s.kn.nextSpawn) || !before(at, s.kn.nextQuestion) {
		probe, next := s.wstmt(ctx, anythingDueQuery), s.wstmt(ctx, nextDueQuery)
		if probe == nil || next == nil {
			return false, false
		}
		c := context.WithoutCancel(ctx)
		var spawns, questions, endings bool
		if err := probe.QueryRowContext(c, at, at).Scan(&spawns, &questions, &endings); err != nil {
			return false, false
		}
		if spawns || questions || endings {
			return true, true
		}
		var ns, nq sql.NullString
		if err := next.QueryRowContext(c).Scan(&ns, &nq); err != nil {
			return false, true
		}
		s.kn.dueSet, s.kn.nextSpawn, s.kn.nextQuestion = true, ns, nq
		return false, true
	}
	return false, true
}

// before reports at < next, a missing next being after every time.
func before(at string, next sql.NullString) bool { return !next.Valid || at < next.String }

// entityCopy is e as a read of its document returns it, sharing nothing
// with e; ok is false when the round trip would change it (norm: check).
func entityCopy(e ledger.Entity, norm bool) (ledger.Entity, bool) {
	c := e
	ok := true
	if norm {
		ok = validUTF8(e.ID, string(e.Kind), e.Statement, e.Curie, e.Definition, string(e.Status), e.Author, e.PendingSpawn, e.LastSpawn) &&
			validUTF8(e.Atoms...) && validUTF8(e.Refs...) && validUTF8(e.DependsOn...)
		c.CreatedAt, ok = utcTime(e.CreatedAt, ok)
		c.UpdatedAt, ok = utcTime(e.UpdatedAt, ok)
	}
	c.Atoms, c.Refs, c.DependsOn = strs(e.Atoms), strs(e.Refs), strs(e.DependsOn)
	if e.Confidence != nil {
		v := *e.Confidence
		c.Confidence = &v
	}
	return c, ok
}

// spawnCopy is entityCopy for a spawn (its request as the row's column).
func spawnCopy(sp spawn.Spawn, norm bool) (spawn.Spawn, bool) {
	c := sp
	ok := true
	if norm {
		ok = validUTF8(sp.ID, string(sp.Kind), sp.EntityID, string(sp.State), string(sp.Outcome), string(sp.Mode), string(sp.PreStatus), sp.Question)
		c.IssuedAt, ok = utcTime(sp.IssuedAt, ok)
		c.ExpiresAt, ok = utcTime(sp.ExpiresAt, ok)
	}
	if sp.Temperature != nil {
		v := *sp.Temperature
		c.Temperature = &v
	}
	if sp.ResolvedAt != nil {
		v := *sp.ResolvedAt
		if norm {
			v, ok = utcTime(v, ok)
		}
		c.ResolvedAt = &v
	}
	// Kept or handed out, the request is a copy of its own: neither the
	// caller who wrote or read it nor one who reads it from here shares
	// what is known.
	c.Request = append(json.RawMessage(nil), sp.Request...)
	return c, ok
}

// strs copies a list as its JSON round trip returns it (empty: nil).
func strs(v []string) []string {
	if len(v) == 0 {
		return nil
	}
	return append([]string(nil), v...)
}

func validUTF8(v ...string) bool {
	for _, s := range v {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// utcTime is t as its RFC 3339 round trip returns it, when that is t in
// UTC (an offset of zero); ok is false otherwise, or if it already was.
func utcTime(t time.Time, ok bool) (time.Time, bool) {
	if _, off := t.Zone(); off != 0 {
		return t, false
	}
	return t.UTC(), ok
}
