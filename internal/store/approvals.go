package store

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
)

// ApprovalStore is the persistence port of tier escalation. Every write is
// conditional; storetest.RunApprovals is its conformance suite.
type ApprovalStore interface {
	// CreateSession stores a new session; ConditionFailed if the id exists.
	// There is no update: a session's default tier is never written again.
	CreateSession(ctx context.Context, s approvals.Session) error
	// GetSession returns a session or ErrNotFound.
	GetSession(ctx context.Context, id string) (approvals.Session, error)
	// ListSessions returns every session, oldest first.
	ListSessions(ctx context.Context) ([]approvals.Session, error)
	// CreateApproval stores a new approval record. A pending (asked) record
	// is stored together with its question frame, appended to the
	// session's log under the next cursor in the same transaction: a
	// question exists only together with its delivery. ErrNotFound if the
	// session does not exist; ConditionFailed on a.ID if the id exists, and
	// on a.CallID if a is pending while another approval of the same call
	// is pending or approved.
	CreateApproval(ctx context.Context, a approvals.Approval, question *approvals.Frame) error
	// GetApproval returns an approval or ErrNotFound.
	GetApproval(ctx context.Context, id string) (approvals.Approval, error)
	// ListApprovals returns approvals in creation order.
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]approvals.Approval, error)
	// ResolveApproval replaces a pending approval with its resolved record,
	// only if it is still pending and is the question a was decided on (its
	// shown fields, approvals.Shown, are a's), in one conditional write
	// (ConditionFailed on a.ID otherwise): the first answer wins, and an
	// answer never lands on another version of a question.
	ResolveApproval(ctx context.Context, a approvals.Approval) error
	// AnnounceEnding appends the ending frame f to the log of f.SessionID
	// under the next cursor and marks approval f.RequestID announced, in one
	// transaction, only if that approval was asked, is resolved and is not
	// yet announced (ConditionFailed on f.RequestID otherwise). It returns
	// the frame with its cursor. At most one ending frame per request.
	AnnounceEnding(ctx context.Context, f approvals.Frame) (approvals.Frame, error)
	// Frames returns up to limit frames of a session with cursor > after,
	// in cursor order. Cursors are 1, 2, 3, … in commit order.
	Frames(ctx context.Context, sessionID string, after int64, limit int) ([]approvals.Frame, error)
	// TouchSubscriber records that subscriber read the session's frames at
	// at (a later read never moves it backwards).
	TouchSubscriber(ctx context.Context, sessionID, subscriber string, at time.Time) error
	// LastRead is the latest read of the session's frames by any
	// subscriber, or the zero time.
	LastRead(ctx context.Context, sessionID string) (time.Time, error)
	// DueApprovals returns up to limit pending approvals whose deadline is
	// at or before now, earliest first; its cost follows the number due.
	DueApprovals(ctx context.Context, now time.Time, limit int) ([]approvals.Approval, error)
	// RecordFirstApproval stores a's first approval (a two-person question
	// that stays pending: approvals.Resolve), only if a is still pending,
	// is the question a was decided on, and has no first approval yet
	// (ConditionFailed on a.ID otherwise): of two approvers racing to be
	// first, one is, and the other's approval is the second.
	RecordFirstApproval(ctx context.Context, a approvals.Approval) error
	// DueReminders returns up to limit pending questions whose reminder
	// (approvals.Approval.RemindAt) is due at now and not yet sent,
	// earliest first; its cost follows the number due.
	DueReminders(ctx context.Context, now time.Time, limit int) ([]approvals.Approval, error)
	// SendReminder marks a's reminder sent and queues its approval.reminder
	// message (hooks.OfReminder at at) in one conditional write, only if a
	// is still pending and its reminder unsent (ConditionFailed on a.ID
	// otherwise): a question is reminded of once, however many race.
	SendReminder(ctx context.Context, a approvals.Approval, at time.Time) error
	// Unannounced returns up to limit asked, resolved approvals whose
	// ending frame has not been appended, oldest first.
	Unannounced(ctx context.Context, limit int) ([]approvals.Approval, error)
}

// ApprovalFilter narrows ListApprovals; zero values match everything.
type ApprovalFilter struct {
	SessionID string
	CallID    string
	State     approvals.State
}

// ConfirmationStore keeps the server's pending confirmations: gated calls
// held until an approver confirms them. A store offers it by implementing
// these methods beside Store; a store that does not answers
// confirmations-unavailable.
type ConfirmationStore interface {
	// PutConfirmation creates p; ConditionFailed if its id exists.
	PutConfirmation(ctx context.Context, p confirm.Pending) error
	// GetConfirmation returns ErrNotFound for an unknown id.
	GetConfirmation(ctx context.Context, id string) (confirm.Pending, error)
	// ListConfirmations returns every confirmation, oldest first.
	ListConfirmations(ctx context.Context) ([]confirm.Pending, error)
	// UpdateConfirmation replaces p only if its stored state is still
	// from; otherwise it returns ConditionFailed and writes nothing.
	UpdateConfirmation(ctx context.Context, p confirm.Pending, from confirm.State) error
}
