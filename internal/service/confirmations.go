package service

import (
	"context"
	"errors"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/store"
)

func (s *core) confirmations() (store.ConfirmationStore, error) {
	if s.Confirmations != nil {
		return s.Confirmations, nil
	}
	return nil, errs.E(confirm.Unavailable, "this store keeps no pending confirmations")
}

// HeldView is the answer to a held call: data.status is
// "pending_confirmation" and data.confirmation_id names it.
type HeldView struct {
	Status string `json:"status"`
	confirm.Pending
}

// Hold stores a gated call that nobody confirmed as a pending
// confirmation. It changes nothing else: the call runs only when an
// approver confirms it.
func (s *Held) Hold(ctx context.Context, tool string, args map[string]any) (HeldView, error) {
	return s.HoldKeyed(ctx, tool, args, nil)
}

// HoldKeyed is Hold with the call's Idempotency-Key, committed with the
// held call (nil: none): a retry after a crash finds it and answers it.
func (s *Held) HoldKeyed(ctx context.Context, tool string, args map[string]any, key *idempotency.Pending) (HeldView, error) {
	cs, err := s.confirmations()
	if err != nil {
		return HeldView{}, err
	}
	now := s.now()
	p := confirm.Pending{ID: s.newID(ids.Confirmation, now), Tool: tool, Args: args, State: confirm.StatePending,
		RequestedBy: s.actor(ctx), RequestedAt: now, ExpiresAt: now.Add(confirm.DefaultTTL)}
	if p.Args == nil {
		p.Args = map[string]any{}
	}
	view := HeldView{Status: confirm.StatusPending, Pending: p}
	var keyed func(*idempotency.Put) error
	if k := keyedPuts(cs); k != nil {
		keyed = func(put *idempotency.Put) error { return k.PutConfirmationKeyed(ctx, p, put) }
	}
	if err := s.putKeyed(key, view, func() error { return cs.PutConfirmation(ctx, p) }, keyed); err != nil {
		return HeldView{}, storeErr(err)
	}
	return view, nil
}

// ConfirmationList is what Held.List returns.
type ConfirmationList struct {
	Confirmations []ConfirmationView `json:"confirmations"`
	Count         int                `json:"count"`
	View          string             `json:"view"`
}

// Duplicate is a confirm that found its call already confirmed: the
// record as it stands and the warning the confirmer receives.
type Duplicate struct {
	View    ConfirmationView
	Warning envelope.Warning
}

// ConfirmationView is a confirmation as listed: its state as of now.
type ConfirmationView struct {
	confirm.Pending
	// ShownDigest is the digest of what is shown of the held call
	// (approvals.HeldDigest); a confirm sends it back.
	ShownDigest string `json:"shown_digest"`
}

func (s *core) confirmationView(p confirm.Pending) ConfirmationView {
	p.State = p.StateAt(s.now())
	return ConfirmationView{Pending: p, ShownDigest: heldDigest(p)}
}

func heldDigest(p confirm.Pending) string {
	return approvals.HeldDigest(p.ID, p.Tool, p.Args, p.RequestedBy)
}

// checkShown refuses an answer to a held call whose digest is not the
// one the person saw (shown; nothing to check when empty). A held call's
// tool, arguments and requester are written once, and the answer's commit
// is conditioned on the state read here, so the call checked is the one
// the commit answers.
func checkShown(p confirm.Pending, shown string) error {
	if shown == "" {
		return nil
	}
	if cur := heldDigest(p); !approvals.DigestMatches(shown, cur) {
		return errs.E(QuestionChanged, p.ID+" is not the held call that was shown (its digest is "+cur+", the answer was for "+quoteID(shown)+"); nothing was answered").
			On(p.ID).Unmet("an answer names the digest of the held call as shown")
	}
	return nil
}

// List lists the pending confirmations, or all of them.
func (s *Held) List(ctx context.Context, all bool) (ConfirmationList, error) {
	cs, err := s.confirmations()
	if err != nil {
		return ConfirmationList{}, err
	}
	list, err := cs.ListConfirmations(ctx)
	if err != nil {
		return ConfirmationList{}, storeErr(err)
	}
	out := []ConfirmationView{}
	for _, p := range list {
		v := s.confirmationView(p)
		if all || v.State == confirm.StatePending {
			out = append(out, v)
		}
	}
	view := "pending"
	if all {
		view = "all"
	}
	return ConfirmationList{Confirmations: out, Count: len(out), View: view}, nil
}

// Show shows one held call, its state as of now (a pending call past its
// deadline is expired).
func (s *Held) Show(ctx context.Context, id string) (ConfirmationView, error) {
	_, p, err := s.confirmation(ctx, id)
	if err != nil {
		return ConfirmationView{}, err
	}
	return s.confirmationView(p), nil
}

func (s *core) confirmation(ctx context.Context, id string) (store.ConfirmationStore, confirm.Pending, error) {
	cs, err := s.confirmations()
	if err != nil {
		return nil, confirm.Pending{}, err
	}
	if ids.Kind(id) != ids.Confirmation {
		return cs, confirm.Pending{}, errs.E(errs.InvalidID, "not a confirmation id: "+quoteID(id)).Unmet("ids look like conf:<ULID>")
	}
	p, err := cs.GetConfirmation(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return cs, p, errs.E(confirm.NotFound, "no confirmation "+id+" in this project")
	}
	if err != nil {
		return cs, p, storeErr(err)
	}
	return cs, p, nil
}

// CheckRequesterLive refuses to run a held call whose requester's token
// was revoked, and records it as revoked. A revocation drops the token's
// held calls itself (dropHeldCalls); this catches one held in between.
func (s *Held) CheckRequesterLive(ctx context.Context, p confirm.Pending) error {
	if ids.Kind(p.RequestedBy) != ids.Token || s.Tokens == nil || p.State != confirm.StatePending {
		return nil
	}
	t, err := s.Tokens.GetToken(ctx, p.RequestedBy)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return storeErr(err)
	}
	if err == nil && t.RevokedAt == nil {
		return nil
	}
	now := s.now()
	revoked := p.Revoke(now)
	if cs, cerr := s.confirmations(); cerr == nil {
		_ = cs.UpdateConfirmation(ctx, revoked, confirm.StatePending) // the record; best effort
	}
	_, _, err = revoked.Claim(s.actor(ctx), now) // a revoked call's claim is its confirmation-revoked error
	return err
}

// dropHeldCalls ends the pending held calls of revoked tokens: a call
// held for confirmation acts with its requester's powers, which a
// revocation takes away. Best effort: CheckRequesterLive is the backstop.
func (s *core) dropHeldCalls(ctx context.Context, tokenIDs ...string) {
	cs, err := s.confirmations()
	if err != nil || len(tokenIDs) == 0 {
		return
	}
	list, err := cs.ListConfirmations(ctx)
	if err != nil {
		return
	}
	gone := map[string]bool{}
	for _, id := range tokenIDs {
		gone[id] = true
	}
	now := s.now()
	for _, p := range list {
		if gone[p.RequestedBy] && p.StateAt(now) == confirm.StatePending {
			_ = cs.UpdateConfirmation(ctx, p.Revoke(now), confirm.StatePending)
		}
	}
}

// Claim is the first half of a confirm: the conditional write
// pending → executing. Exactly one confirm wins it; the winner gets the
// held call to run (then calls Finish). A confirm that loses
// gets dup: the existing record with a warning, and changes nothing.
func (s *Held) Claim(ctx context.Context, id, shown string) (p confirm.Pending, dup *Duplicate, err error) {
	for attempt := 0; ; attempt++ {
		cs, cur, err := s.confirmation(ctx, id)
		if err != nil {
			return cur, nil, err
		}
		if err := checkShown(cur, shown); err != nil {
			return cur, nil, err
		}
		now := s.now()
		next, isDup, err := cur.Claim(s.actor(ctx), now)
		if err != nil {
			if cur.State == confirm.StatePending && cur.StateAt(now) == confirm.StateExpired {
				_ = cs.UpdateConfirmation(ctx, cur.Expire(), confirm.StatePending) // a record of the expiry; best effort
			}
			return cur, nil, err
		}
		if isDup {
			return cur, &Duplicate{View: s.confirmationView(cur), Warning: envelope.Warning{Code: envelope.WarnConfirmationDuplicate,
				Message: id + " was already confirmed by " + cur.DecidedBy + " (" + string(cur.State) + "); this confirm changed nothing"}}, nil
		}
		err = cs.UpdateConfirmation(ctx, next, confirm.StatePending)
		if isCondition(err) && attempt < maxAttempts {
			continue // another confirm or refusal committed first: re-read
		}
		if err != nil {
			return cur, nil, storeErr(err)
		}
		return next, nil, nil
	}
}

// Finish records what the claimed call did.
func (s *Held) Finish(ctx context.Context, p confirm.Pending, o confirm.Outcome) error {
	cs, err := s.confirmations()
	if err != nil {
		return err
	}
	if err := cs.UpdateConfirmation(ctx, p.Finish(o), confirm.StateExecuting); err != nil {
		return storeErr(err)
	}
	return nil
}

// Refuse ends a pending confirmation without running it.
func (s *Held) Refuse(ctx context.Context, id, reason, shown string) (ConfirmationView, error) {
	for attempt := 0; ; attempt++ {
		cs, cur, err := s.confirmation(ctx, id)
		if err != nil {
			return ConfirmationView{}, err
		}
		if err := checkShown(cur, shown); err != nil {
			return ConfirmationView{}, err
		}
		next, err := cur.Refuse(s.actor(ctx), reason, s.now())
		if err != nil {
			return ConfirmationView{}, err
		}
		err = cs.UpdateConfirmation(ctx, next, confirm.StatePending)
		if isCondition(err) && attempt < maxAttempts {
			continue
		}
		if err != nil {
			return ConfirmationView{}, storeErr(err)
		}
		return s.confirmationView(next), nil
	}
}
