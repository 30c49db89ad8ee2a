package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dont-cli/dont/internal/idempotency"
	"strings"
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/store"
)

// approvalSchema holds sessions, approvals, their frame logs and the
// subscribers' leases. Create applies it; a database made before it
// existed gets it on first use (approvalsReady).
const approvalSchema = `
CREATE TABLE IF NOT EXISTS approval_sessions(
	id TEXT PRIMARY KEY, opened_at TEXT NOT NULL, last_cursor INTEGER NOT NULL DEFAULT 0, doc BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS approvals(
	id TEXT PRIMARY KEY, session_id TEXT NOT NULL, call_id TEXT NOT NULL, state TEXT NOT NULL,
	verdict TEXT NOT NULL DEFAULT '', asked INTEGER NOT NULL, announced INTEGER NOT NULL DEFAULT 0,
	created_at TEXT NOT NULL, deadline TEXT NOT NULL, doc BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS approvals_session ON approvals(session_id, created_at);
CREATE INDEX IF NOT EXISTS approvals_call ON approvals(call_id, created_at);
-- At most one open or granted question per call, whatever races.
CREATE UNIQUE INDEX IF NOT EXISTS approvals_call_active ON approvals(call_id) WHERE state = 'pending' OR verdict = 'approved';
-- Sweeps read only due rows and missing announcements: O(due), not O(stored).
CREATE INDEX IF NOT EXISTS approvals_due ON approvals(deadline) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS approvals_unannounced ON approvals(created_at) WHERE asked = 1 AND state = 'resolved' AND announced = 0;
CREATE TABLE IF NOT EXISTS approval_frames(
	session_id TEXT NOT NULL, cursor INTEGER NOT NULL, request_id TEXT NOT NULL, kind TEXT NOT NULL, doc BLOB NOT NULL,
	PRIMARY KEY(session_id, cursor)) WITHOUT ROWID;
-- At most one ending frame per request.
CREATE UNIQUE INDEX IF NOT EXISTS approval_frames_one_ending ON approval_frames(request_id) WHERE kind = 'approval_resolved';
-- A question's reminder until it is sent or the question ends: sending
-- deletes the row, so it is sent once however many sweepers race.
CREATE TABLE IF NOT EXISTS approval_reminders(
	approval_id TEXT PRIMARY KEY, remind_at TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS approval_reminders_due ON approval_reminders(remind_at);
CREATE TABLE IF NOT EXISTS approval_subscribers(
	session_id TEXT NOT NULL, subscriber TEXT NOT NULL, last_read_at TEXT NOT NULL,
	PRIMARY KEY(session_id, subscriber)) WITHOUT ROWID;
`

// approvalObjects are the names approvalSchema creates.
var approvalObjects = []any{"approval_sessions", "approvals", "approvals_session", "approvals_call", "approvals_call_active",
	"approvals_due", "approvals_unannounced", "approval_frames", "approval_frames_one_ending", "approval_subscribers",
	"approval_reminders", "approval_reminders_due"}

// approvalSchemaReady remembers the stores whose schema has been checked.
var approvalSchemaReady sync.Map // *Store -> struct{}

// approvalsReady makes sure the approval tables exist: a database created
// before them is migrated on first use, in one immediate transaction.
func (s *Store) approvalsReady(ctx context.Context) error {
	if _, ok := approvalSchemaReady.Load(s); ok {
		return nil
	}
	q := "SELECT count(*) FROM sqlite_master WHERE name IN (?" + strings.Repeat(",?", len(approvalObjects)-1) + ")"
	var n int
	if err := s.queryRow(ctx, q, approvalObjects...).Scan(&n); err != nil {
		return classify(err)
	}
	if n != len(approvalObjects) {
		if err := s.write(ctx, func(tx *txn) error {
			_, err := tx.ExecContext(ctx, approvalSchema)
			return err
		}); err != nil {
			return err
		}
	}
	approvalSchemaReady.Store(s, struct{}{})
	return nil
}

// CreateSession implements store.ApprovalStore.
func (s *Store) CreateSession(ctx context.Context, ses approvals.Session) error {
	return s.CreateSessionKeyed(ctx, ses, nil)
}

// CreateSessionKeyed implements store.KeyedPuts.
func (s *Store) CreateSessionKeyed(ctx context.Context, ses approvals.Session, key *idempotency.Put) error {
	if err := s.approvalsReady(ctx); err != nil {
		return err
	}
	doc, err := json.Marshal(ses)
	if err != nil {
		return err
	}
	return s.writeKeyed(ctx, key, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO approval_sessions(id, opened_at, doc) VALUES(?,?,?) ON CONFLICT(id) DO NOTHING",
			ses.ID, timeText(ses.OpenedAt), doc)
		return affectedOne(res, err, ses.ID)
	})
}

// GetSession implements store.ApprovalStore.
func (s *Store) GetSession(ctx context.Context, id string) (approvals.Session, error) {
	var ses approvals.Session
	if err := s.approvalsReady(ctx); err != nil {
		return ses, err
	}
	var doc []byte
	if err := s.queryRow(ctx, "SELECT doc FROM approval_sessions WHERE id = ?", id).Scan(&doc); err != nil {
		return ses, classify(err)
	}
	return ses, json.Unmarshal(doc, &ses)
}

// ListSessions implements store.ApprovalStore.
func (s *Store) ListSessions(ctx context.Context) ([]approvals.Session, error) {
	if err := s.approvalsReady(ctx); err != nil {
		return nil, err
	}
	return queryDocs[approvals.Session](ctx, s, "SELECT doc FROM approval_sessions ORDER BY opened_at, id")
}

// CreateApproval implements store.ApprovalStore.
func (s *Store) CreateApproval(ctx context.Context, a approvals.Approval, question *approvals.Frame) error {
	if err := s.approvalsReady(ctx); err != nil {
		return err
	}
	a.Announced = false
	doc, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		var one int
		if err := tx.QueryRowContext(ctx, "SELECT 1 FROM approval_sessions WHERE id = ?", a.SessionID).Scan(&one); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		if a.State == approvals.Pending || a.Verdict == approvals.Approved {
			var other string
			err := tx.QueryRowContext(ctx, "SELECT id FROM approvals WHERE call_id = ? AND (state = 'pending' OR verdict = 'approved') LIMIT 1", a.CallID).Scan(&other)
			if err == nil {
				return &store.ConditionFailed{ID: a.CallID}
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO approvals(id, session_id, call_id, state, verdict, asked, created_at, deadline, doc)
			VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO NOTHING`,
			a.ID, a.SessionID, a.CallID, string(a.State), string(a.Verdict), a.Asked, timeText(a.CreatedAt), timeText(a.Deadline), doc)
		if err := affectedOne(res, err, a.ID); err != nil {
			return err
		}
		if question != nil {
			if _, err := appendFrame(ctx, tx, question); err != nil {
				return err
			}
		}
		if a.Asked && a.State == approvals.Pending && a.RemindAt != nil {
			if _, err := tx.ExecContext(ctx, "INSERT INTO approval_reminders(approval_id, remind_at) VALUES(?,?)", a.ID, timeText(*a.RemindAt)); err != nil {
				return err
			}
		}
		return s.announceAsked(ctx, tx, a)
	})
}

// appendFrame numbers f with its session's next cursor and stores it. The
// transaction is immediate, so cursor order is commit order.
func appendFrame(ctx context.Context, tx *txn, f *approvals.Frame) (int64, error) {
	if err := tx.QueryRowContext(ctx, "UPDATE approval_sessions SET last_cursor = last_cursor + 1 WHERE id = ? RETURNING last_cursor",
		f.SessionID).Scan(&f.Cursor); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, store.ErrNotFound
		}
		return 0, err
	}
	doc, err := json.Marshal(f)
	if err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO approval_frames(session_id, cursor, request_id, kind, doc) VALUES(?,?,?,?,?)",
		f.SessionID, f.Cursor, f.RequestID, string(f.Kind), doc)
	return f.Cursor, err
}

// GetApproval implements store.ApprovalStore.
func (s *Store) GetApproval(ctx context.Context, id string) (approvals.Approval, error) {
	list, err := s.approvals(ctx, "SELECT doc, announced FROM approvals WHERE id = ?", id)
	if err != nil {
		return approvals.Approval{}, err
	}
	if len(list) == 0 {
		return approvals.Approval{}, store.ErrNotFound
	}
	return list[0], nil
}

// ListApprovals implements store.ApprovalStore.
func (s *Store) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]approvals.Approval, error) {
	q, args := "SELECT doc, announced FROM approvals WHERE 1=1", []any{}
	if f.SessionID != "" {
		q, args = q+" AND session_id = ?", append(args, f.SessionID)
	}
	if f.CallID != "" {
		q, args = q+" AND call_id = ?", append(args, f.CallID)
	}
	if f.State != "" {
		q, args = q+" AND state = ?", append(args, string(f.State))
	}
	return s.approvals(ctx, q+" ORDER BY created_at, id", args...)
}

// ResolveApproval implements store.ApprovalStore: conditional on pending
// and on the question being the one decided on (its shown fields).
func (s *Store) ResolveApproval(ctx context.Context, a approvals.Approval) error {
	if err := s.approvalsReady(ctx); err != nil {
		return err
	}
	a.Announced = false
	doc, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		// The answer commits only on the question it was decided on: the
		// stored one's shown fields (approvals.Shown) must be a's, read in
		// this same transaction.
		cur, err := pendingApproval(ctx, tx, a.ID)
		if err != nil {
			return err
		}
		if approvals.ShownDigest(cur.Shown()) != approvals.ShownDigest(a.Shown()) || firstBy(cur) != firstBy(a) {
			return &store.ConditionFailed{ID: a.ID}
		}
		res, err := tx.ExecContext(ctx, "UPDATE approvals SET state = ?, verdict = ?, doc = ? WHERE id = ? AND state = 'pending'",
			string(a.State), string(a.Verdict), doc, a.ID)
		if err := affectedOne(res, err, a.ID); err != nil {
			return err
		}
		if a.State != approvals.Pending && cur.RemindAt != nil {
			if _, err := tx.ExecContext(ctx, "DELETE FROM approval_reminders WHERE approval_id = ?", a.ID); err != nil {
				return err
			}
		}
		return s.announceEnded(ctx, tx, a)
	})
}

// pendingApproval reads question id inside write transaction tx, so that
// the write commits only on what was read; a question that is gone or no
// longer pending is a ConditionFailed.
func pendingApproval(ctx context.Context, tx *txn, id string) (approvals.Approval, error) {
	var stored []byte
	err := tx.QueryRowContext(ctx, "SELECT doc FROM approvals WHERE id = ? AND state = 'pending'", id).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		return approvals.Approval{}, &store.ConditionFailed{ID: id}
	}
	if err != nil {
		return approvals.Approval{}, err
	}
	var cur approvals.Approval
	if err := json.Unmarshal(stored, &cur); err != nil {
		return approvals.Approval{}, fmt.Errorf("sqlite: decode approval %s: %w", id, err)
	}
	return cur, nil
}

// firstBy is who approved a two-person question first ("" for nobody):
// an answer commits only on the version of the question it was decided on.
func firstBy(a approvals.Approval) string {
	if a.FirstApproval == nil {
		return ""
	}
	return a.FirstApproval.By
}

// RecordFirstApproval implements store.ApprovalStore.
func (s *Store) RecordFirstApproval(ctx context.Context, a approvals.Approval) error {
	if err := s.approvalsReady(ctx); err != nil {
		return err
	}
	if a.State != approvals.Pending || a.FirstApproval == nil {
		return fmt.Errorf("sqlite: %s is not a first approval", a.ID)
	}
	a.Announced = false
	doc, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		cur, err := pendingApproval(ctx, tx, a.ID)
		if err != nil {
			return err
		}
		if cur.FirstApproval != nil || approvals.ShownDigest(cur.Shown()) != approvals.ShownDigest(a.Shown()) {
			return &store.ConditionFailed{ID: a.ID}
		}
		res, err := tx.ExecContext(ctx, "UPDATE approvals SET doc = ? WHERE id = ? AND state = 'pending'", doc, a.ID)
		return affectedOne(res, err, a.ID)
	})
}

// AnnounceEnding implements store.ApprovalStore: at most one ending
// frame per request, appended in the same transaction that marks it.
func (s *Store) AnnounceEnding(ctx context.Context, f approvals.Frame) (approvals.Frame, error) {
	if err := s.approvalsReady(ctx); err != nil {
		return f, err
	}
	err := s.write(ctx, func(tx *txn) error {
		var session, state string
		var asked, announced bool
		err := tx.QueryRowContext(ctx, "SELECT session_id, state, asked, announced FROM approvals WHERE id = ?", f.RequestID).
			Scan(&session, &state, &asked, &announced)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if session != f.SessionID || approvals.State(state) != approvals.Resolved || !asked || announced {
			return &store.ConditionFailed{ID: f.RequestID}
		}
		if _, err := appendFrame(ctx, tx, &f); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "UPDATE approvals SET announced = 1 WHERE id = ? AND announced = 0", f.RequestID)
		return affectedOne(res, err, f.RequestID)
	})
	return f, err
}

// Frames implements store.ApprovalStore.
func (s *Store) Frames(ctx context.Context, sessionID string, after int64, limit int) ([]approvals.Frame, error) {
	if err := s.approvalsReady(ctx); err != nil {
		return nil, err
	}
	return queryDocs[approvals.Frame](ctx, s,
		"SELECT doc FROM approval_frames WHERE session_id = ? AND cursor > ? ORDER BY cursor LIMIT ?", sessionID, after, limit)
}

// TouchSubscriber implements store.ApprovalStore.
func (s *Store) TouchSubscriber(ctx context.Context, sessionID, subscriber string, at time.Time) error {
	if err := s.approvalsReady(ctx); err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO approval_subscribers(session_id, subscriber, last_read_at) VALUES(?,?,?)
			ON CONFLICT(session_id, subscriber) DO UPDATE SET last_read_at = max(last_read_at, excluded.last_read_at)`,
			sessionID, subscriber, timeText(at))
		return err
	})
}

// LastRead implements store.ApprovalStore.
func (s *Store) LastRead(ctx context.Context, sessionID string) (time.Time, error) {
	if err := s.approvalsReady(ctx); err != nil {
		return time.Time{}, err
	}
	var last sql.NullString
	if err := s.queryRow(ctx, "SELECT max(last_read_at) FROM approval_subscribers WHERE session_id = ?", sessionID).Scan(&last); err != nil {
		return time.Time{}, classify(err)
	}
	if !last.Valid {
		return time.Time{}, nil
	}
	return time.Parse(timeKey, last.String)
}

// DueApprovals implements store.ApprovalStore through approvals_due.
func (s *Store) DueApprovals(ctx context.Context, now time.Time, limit int) ([]approvals.Approval, error) {
	return s.approvals(ctx, dueApprovalsQuery, timeText(now), limit)
}

const dueApprovalsQuery = "SELECT doc, announced FROM approvals INDEXED BY approvals_due WHERE state = 'pending' AND deadline <= ? ORDER BY deadline LIMIT ?"

// DueReminders implements store.ApprovalStore through
// approval_reminders_due: only unsent reminders of open questions have a
// row.
func (s *Store) DueReminders(ctx context.Context, now time.Time, limit int) ([]approvals.Approval, error) {
	return s.approvals(ctx, dueRemindersQuery, timeText(now), limit)
}

const dueRemindersQuery = `SELECT a.doc, a.announced FROM approval_reminders r INDEXED BY approval_reminders_due
	JOIN approvals a ON a.id = r.approval_id WHERE r.remind_at <= ? AND a.state = 'pending' ORDER BY r.remind_at LIMIT ?`

// SendReminder implements store.ApprovalStore: the reminder's row is
// deleted and its message queued in one transaction, only while the
// question is pending and the row is there.
func (s *Store) SendReminder(ctx context.Context, a approvals.Approval, at time.Time) error {
	if err := s.approvalsReady(ctx); err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM approvals WHERE id = ? AND state = 'pending'", a.ID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return &store.ConditionFailed{ID: a.ID}
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM approval_reminders WHERE approval_id = ?", a.ID)
		if err := affectedOne(res, err, a.ID); err != nil {
			return err
		}
		m, ok := hooks.OfReminder(a, at)
		return s.announce(ctx, tx, m, ok)
	})
}

// Unannounced implements store.ApprovalStore through approvals_unannounced.
func (s *Store) Unannounced(ctx context.Context, limit int) ([]approvals.Approval, error) {
	return s.approvals(ctx, "SELECT doc, announced FROM approvals INDEXED BY approvals_unannounced WHERE asked = 1 AND state = 'resolved' AND announced = 0 ORDER BY created_at LIMIT ?", limit)
}

func (s *Store) approvals(ctx context.Context, q string, args ...any) ([]approvals.Approval, error) {
	if err := s.approvalsReady(ctx); err != nil {
		return nil, err
	}
	short := strings.Contains(q, " LIMIT ") || strings.HasSuffix(q, "WHERE id = ?") // one by id, a sweep's probe
	var out []approvals.Approval
	err := s.readRows(ctx, short, q, args, func(rows *sql.Rows) error {
		var doc []byte
		var announced bool
		if err := rows.Scan(&doc, &announced); err != nil {
			return err
		}
		var a approvals.Approval
		if err := json.Unmarshal(doc, &a); err != nil {
			return err
		}
		a.Announced = announced
		out = append(out, a)
		return nil
	})
	return out, classify(err)
}

var _ store.ApprovalStore = (*Store)(nil)

// anythingDueQuery is the sweep's probe in one statement, each part a
// search of its index: a pending spawn or question due at ?, a question's
// unsent reminder due then, or a question's ending not yet announced.
const anythingDueQuery = `SELECT
	EXISTS(SELECT 1 FROM spawns INDEXED BY spawns_due WHERE state = 'pending' AND expires_at <= ?1),
	EXISTS(SELECT 1 FROM approvals INDEXED BY approvals_due WHERE state = 'pending' AND deadline <= ?2)
		OR EXISTS(SELECT 1 FROM approval_reminders INDEXED BY approval_reminders_due WHERE remind_at <= ?2),
	EXISTS(SELECT 1 FROM approvals INDEXED BY approvals_unannounced WHERE asked = 1 AND state = 'resolved' AND announced = 0)`

// AnythingDue reports, with one prepared read, whether a sweep at now
// would find work: a caller's cheap check before it runs the sweep's
// queries (ExpiringSpawns, DueApprovals, Unannounced).
func (s *Store) AnythingDue(ctx context.Context, now time.Time) (bool, error) {
	if err := s.approvalsReady(ctx); err != nil {
		return false, err
	}
	at := timeText(now)
	if due, ok := s.knownDue(ctx, at); ok {
		return due, nil
	}
	var spawns, questions, endings bool
	if err := s.queryRow(ctx, anythingDueQuery, at, at).Scan(&spawns, &questions, &endings); err != nil {
		return false, classify(err)
	}
	return spawns || questions || endings, nil
}
