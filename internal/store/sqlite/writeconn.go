package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// Every write of a Store runs on one connection of its own, taken from
// the pool on the first write and kept until Close: its statements stay
// prepared (prepared.go), its page cache stays hot for short reads, and
// its automatic checkpoints are off, so that no commit copies the WAL
// into the database while it holds the write lock.
//
// Instead, a commit that leaves checkpointFrames or more frames not yet
// checkpointed starts a PASSIVE checkpoint in the background on a pooled
// connection, while writers go on. Frames
// committed meanwhile stay in the WAL, and SQLite starts the WAL over only
// when a writer finds all of it checkpointed; so when the WAL has grown
// past walRestartFrames the next commit copies that short tail once more
// (committed), and the next write starts the file over.
// Close checkpoints a WAL of checkpointFrames or more that this Store
// added to, so that short-lived processes sharing the
// file with a long-lived one cannot grow it without bound (SQLite itself
// checkpoints when the last connection to the file closes).
const (
	// checkpointFrames is SQLite's default automatic checkpoint (1000 pages).
	checkpointFrames = 1000
	walRestartFrames = 2048
	walMaxFrames     = 4096
)

// write runs fn in one immediate transaction on the write connection,
// with the store's busy retries.
//
// Writers that arrive while another holds the write connection commit
// together (group commit): the first to find no leader takes writeMu and
// runs every write queued by then in one immediate transaction, each in a
// SAVEPOINT of its own so that one that fails (a condition, a constraint)
// is rolled back alone and the others commit; each caller returns after
// that COMMIT, with its own result. A lone writer runs as it always did,
// with no savepoint. Under many concurrent callers (dont serve's workers)
// the pages every write touches — the right edge of each table and
// index — are written to the WAL once per batch instead of once per write.
func (s *Store) write(ctx context.Context, fn func(*txn) error) error {
	// What it writes is not known (known.go): the Store forgets what it
	// knew as the write starts, before it reads in its transaction.
	return s.writeLearning(ctx, func(tx *txn) error {
		s.forgetKnown()
		return fn(tx)
	}, nil)
}

// writeLearning is write of a write whose effect learn records in what
// the Store knows (known.go), once it has committed.
func (s *Store) writeLearning(ctx context.Context, fn func(*txn) error, learn func()) error {
	w := &queuedWrite{ctx: ctx, fn: fn, learn: learn}
	s.queueMu.Lock()
	s.queue = append(s.queue, w)
	if s.leading {
		// A leader is running: its batch, or a later one, takes w, or w
		// is made the next leader.
		w.done = make(chan struct{})
		s.queueMu.Unlock()
		<-w.done
		if !w.leads {
			return w.err
		}
	} else {
		s.leading = true
		s.queueMu.Unlock()
	}
	s.lead(w)
	return w.err
}

// queuedWrite is one caller's write waiting for (or in) a batch.
type queuedWrite struct {
	ctx   context.Context
	fn    func(*txn) error
	learn func() // what it wrote, for what the Store knows (nil: not known)
	err   error
	done  chan struct{} // closed when err is set or the write leads; nil for a first leader
	leads bool          // made the next leader (set before done is closed)
}

// maxBatch bounds the writes of one group commit.
const maxBatch = 64

// lead runs one batch, the queued writes up to maxBatch with w (the
// queue's first) among them, then hands the leadership to the first
// write still queued, or gives it up: a leader returns after its own
// batch, so that no caller commits others' writes for long.
func (s *Store) lead(w *queuedWrite) {
	var batch []*queuedWrite
	s.writeMu.Lock()
	defer func() {
		p := recover()
		if p != nil {
			// A write that panicked left its transaction open: undo it, or
			// the next BEGIN fails and short reads on this connection see
			// what it wrote.
			if s.wconn != nil {
				s.wexec(context.Background(), "ROLLBACK") //nolint:errcheck // none may be open
			}
			s.forgetKnown() // what it read and kept in its transaction
			s.kn.valid = false
			s.writeMu.Unlock()
			for _, o := range batch {
				if o != w && o.done != nil {
					o.err = errors.New("sqlite: a write of the same batch panicked")
				}
			}
		}
		s.queueMu.Lock()
		if len(s.queue) > 0 {
			next := s.queue[0]
			next.leads = true
			close(next.done)
		} else {
			s.queue, s.leading = nil, false
		}
		s.queueMu.Unlock()
		for _, o := range batch {
			if o != w && o.done != nil {
				close(o.done)
			}
		}
		if p != nil {
			panic(p)
		}
	}()
	s.queueMu.Lock()
	batch = s.queue[:min(len(s.queue), maxBatch):min(len(s.queue), maxBatch)]
	s.queue = s.queue[len(batch):]
	s.queueMu.Unlock()
	// The disk's free space is checked once per batch, before its BEGIN
	// (space.go): one statfs for all the writes it commits.
	if err := s.roomToWrite(); err != nil {
		for _, o := range batch {
			o.err = err
		}
	} else {
		s.runBatch(batch)
	}
	s.writeMu.Unlock()
}

// runBatch runs the writes of batch in one transaction (one alone without
// a savepoint), with the store's busy retries, and sets each one's error.
// The caller holds writeMu.
func (s *Store) runBatch(batch []*queuedWrite) {
	for attempt := 0; ; attempt++ {
		var err error
		if len(batch) == 1 {
			err = s.writeOnce(batch[0].ctx, batch[0].fn)
			batch[0].err = err
		} else {
			err = s.writeGroup(batch)
		}
		if isBusy(err) && attempt < 20 && anyLive(batch) {
			s.forgetKnown() // what the rolled-back attempt read and kept
			time.Sleep(time.Duration(1+rand.IntN(10*(attempt+1))) * time.Millisecond)
			continue
		}
		if err == nil {
			s.committed()
		}
		s.afterBatch(batch, err)
		for _, w := range batch {
			w.err = classify(w.err)
		}
		return
	}
}

func anyLive(batch []*queuedWrite) bool {
	for _, w := range batch {
		if w.ctx.Err() == nil {
			return true
		}
	}
	return false
}

// writeGroup runs several writes in one immediate transaction, each in a
// savepoint. It returns the error that ended the whole transaction (BEGIN,
// COMMIT, a busy write that the batch retries), having set it on every
// write; else nil, each write's own error set.
func (s *Store) writeGroup(batch []*queuedWrite) error {
	fail := func(err error) error {
		for _, w := range batch {
			w.err = err
		}
		return err
	}
	if _, err := s.writeConn(context.Background()); err != nil {
		return fail(err)
	}
	if _, err := s.wexec(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
			s.dropWriteConn()
		}
		return fail(err)
	}
	s.knownState()
	abort := func(err error) error {
		s.wexec(context.Background(), "ROLLBACK") //nolint:errcheck // as in writeOnce
		return fail(err)
	}
	committing := 0
	for _, w := range batch {
		if w.err = w.ctx.Err(); w.err != nil {
			continue // a caller gone before its write commits nothing
		}
		if _, err := s.wexec(context.Background(), "SAVEPOINT w"); err != nil {
			return abort(err)
		}
		w.err = w.fn(&txn{s: s})
		if w.err == nil {
			w.err = w.ctx.Err()
		}
		if isBusy(w.err) {
			return abort(w.err)
		}
		if w.err != nil {
			if _, err := s.wexec(context.Background(), "ROLLBACK TO w"); err != nil {
				// SQLite ended the transaction itself: nothing of it stays.
				return abort(err)
			}
		} else {
			committing++
		}
		if _, err := s.wexec(context.Background(), "RELEASE w"); err != nil {
			return abort(err)
		}
	}
	if committing == 0 {
		_, err := s.wexec(context.Background(), "ROLLBACK")
		return err
	}
	if _, err := s.wexec(context.Background(), "COMMIT"); err != nil {
		return abort(err)
	}
	if committing > 1 {
		s.groupCommits.Add(1)
	}
	return nil
}

func (s *Store) writeOnce(ctx context.Context, fn func(*txn) error) error {
	if _, err := s.writeConn(ctx); err != nil {
		return err
	}
	if _, err := s.wexec(ctx, "BEGIN IMMEDIATE"); err != nil {
		if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
			s.dropWriteConn()
			return err
		}
		// The driver reports a cancellation it saw even when BEGIN took
		// effect: end whatever it began.
		s.wexec(context.Background(), "ROLLBACK") //nolint:errcheck // none may be open
		return err
	}
	s.knownState()
	err := fn(&txn{s: s})
	if err == nil {
		err = ctx.Err() // a caller gone before the commit commits nothing
	}
	if err == nil {
		_, err = s.wexec(context.WithoutCancel(ctx), "COMMIT")
	}
	if err != nil {
		// Undoes what fn wrote; an error means SQLite has already rolled
		// the transaction back (a failed COMMIT, an interrupted statement).
		s.wexec(context.Background(), "ROLLBACK") //nolint:errcheck // see above
	}
	return err
}

// wexec runs one statement on the write connection; the caller holds writeMu.
func (s *Store) wexec(ctx context.Context, q string) (sql.Result, error) {
	if st := s.wstmt(ctx, q); st != nil {
		return st.ExecContext(ctx)
	}
	return s.wconn.ExecContext(ctx, q)
}

// writeConn returns the write connection, opening it if need be. The
// caller holds writeMu.
func (s *Store) writeConn(ctx context.Context) (*sql.Conn, error) {
	if s.wconn != nil {
		return s.wconn, nil
	}
	if s.closing {
		// A write queued behind Close must not open a connection that
		// Close has already passed and db.Close would never reach.
		return nil, fmt.Errorf("sqlite: the store is closed: %w", sql.ErrConnDone)
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var file string
	if err := c.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
		c.Close()
		return nil, err
	}
	// temp_store=MEMORY keeps the sub-journal of a group commit's
	// savepoints in memory: on disk, a batch whose savepoints copied more
	// than 64 KiB of pages spilled it to a temporary file, written by
	// every savepoint and never truncated before the COMMIT (a tenth of
	// dont serve's CPU under 16 workers). Reads that sort or build
	// transient indexes run on pooled connections, which keep the
	// default.
	for _, pragma := range []string{"PRAGMA wal_autocheckpoint=0", "PRAGMA temp_store=MEMORY"} {
		if _, err := c.ExecContext(ctx, pragma); err != nil {
			c.Close()
			return nil, err
		}
	}
	s.wconn = c
	if s.shm == nil {
		s.shm, _ = os.Open(file + "-shm") // the checkpoint hint; none without it
	}
	return c, nil
}

func (s *Store) dropWriteConn() {
	s.forgetKnown()
	s.kn.valid = false
	if s.wconn != nil {
		s.closeWriteStatements()
		s.wconn.Close()
		s.wconn = nil
	}
}

// committed starts a background checkpoint (one at a time) when the
// backlog has reached checkpointFrames. When that checkpoint has left a
// WAL of walRestartFrames or more, the next commit copies the tail, and
// past walMaxFrames (writers outpacing the background) a commit waits for
// the background and checkpoints at once, as SQLite's automatic checkpoint
// would: either way the WAL is all copied and the next write starts it
// over. The caller holds writeMu.
func (s *Store) committed() {
	s.sinceCheckpoint++
	if s.closing {
		return
	}
	length, backlog := s.walFrames()
	if backlog > 0 && (length >= walMaxFrames || (s.tailWanted.Load() && !s.checkpointing.Load())) {
		s.checkpoints.Wait()
		s.tailWanted.Store(false)
		s.sinceCheckpoint = 0
		s.wconn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)") //nolint:errcheck // best effort; the next commit retries
		return
	}
	if backlog < checkpointFrames || !s.checkpointing.CompareAndSwap(false, true) {
		return
	}
	s.sinceCheckpoint = 0
	s.checkpoints.Add(1)
	go func() {
		defer s.checkpoints.Done()
		defer s.checkpointing.Store(false)
		// PASSIVE: it copies what no reader still needs and never waits
		// for a lock; what it leaves, a later one copies.
		var busy, length, copied int
		if err := s.db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &length, &copied); err == nil && length >= walRestartFrames {
			s.tailWanted.Store(true)
		}
	}()
}

// walFrames reads the WAL's length in frames and how many of them are not
// yet checkpointed from the wal-index header in the -shm file (mxFrame at
// byte 16, nBackfill at byte 96, in native byte order: SQLite's documented
// WAL format). It is a hint, read without a lock: zeros when the file
// cannot be read.
func (s *Store) walFrames() (length, backlog int) {
	if s.shm == nil {
		return 0, 0
	}
	var hdr [100]byte
	if _, err := s.shm.ReadAt(hdr[:], 0); err != nil {
		return 0, 0
	}
	mx, backfilled := binary.NativeEndian.Uint32(hdr[16:]), binary.NativeEndian.Uint32(hdr[96:])
	if backfilled >= mx {
		return int(mx), 0
	}
	return int(mx), int(mx - backfilled)
}

// Close waits for a background checkpoint, checkpoints a large backlog
// this Store has added to, and closes the database.
func (s *Store) Close() error {
	s.writeMu.Lock()
	s.closing = true
	s.checkpoints.Wait()
	if s.wconn != nil {
		if length, backlog := s.walFrames(); s.sinceCheckpoint > 0 && backlog > 0 && length >= checkpointFrames {
			s.wconn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)") //nolint:errcheck // best effort, as SQLite's own
		}
		s.closeWriteStatements()
		s.wconn.Close()
		s.wconn = nil
	}
	if s.shm != nil {
		s.shm.Close()
		s.shm = nil
	}
	s.writeMu.Unlock()
	s.closeStatements()
	return s.db.Close()
}
