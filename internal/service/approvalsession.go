package service

import (
	"context"
	"errors"
	"github.com/dont-cli/dont/internal/idempotency"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/store"
)

// SessionView is a session as callers see it.
type SessionView struct {
	approvals.Session
	LastRead       *time.Time `json:"last_read_at,omitempty"`
	LiveSubscriber bool       `json:"live_subscriber"`
}

// OpenSessionInput opens a session at its default tier.
type OpenSessionInput struct {
	Tier string
	Name string
	By   string
	// Key is the call's Idempotency-Key, committed with the session (nil:
	// none).
	Key *idempotency.Pending
}

// OpenSession records a new session with its default tier.
func (s *Escalations) OpenSession(ctx context.Context, in OpenSessionInput) (SessionView, error) {
	var res SessionView
	st, err := s.approvalStore()
	if err != nil {
		return res, err
	}
	if !approvals.Tier(in.Tier).Valid() {
		return res, errs.E(errs.InvalidArgument, "unknown tier "+quoteID(in.Tier)).
			Unmet("tier is one of " + approvals.TierNames(approvals.Tiers))
	}
	if p := s.PrincipalOf(ctx); approvals.AboveCeiling(approvals.Tier(in.Tier), s.Approvals.SessionCeiling) && !p.IsPerson() {
		ceiling := approvals.CeilingOrDefault(s.Approvals.SessionCeiling)
		return res, errs.E(SessionAboveCeiling, "a "+p.Role+" may open a session at most at "+string(ceiling)+", the person's session ceiling; "+
			in.Tier+" needs a person").Unmet("tier at most "+string(ceiling)+" for an agent").
			With("tier", in.Tier).With("ceiling", string(ceiling))
	}
	if len(in.Name) > 200 {
		return res, errs.E(errs.InvalidArgument, "a session name is at most 200 bytes").
			Unmet("a session name is at most 200 bytes").With("tier", in.Tier)
	}
	now := s.now()
	ses := approvals.Session{ID: s.newID(ids.Session, now), Name: in.Name, Tier: approvals.Tier(in.Tier), OpenedBy: s.by(ctx, in.By), OpenedAt: now}
	view := SessionView{Session: ses}
	var keyed func(*idempotency.Put) error
	if k := keyedPuts(st); k != nil {
		keyed = func(put *idempotency.Put) error { return k.CreateSessionKeyed(ctx, ses, put) }
	}
	if err := s.putKeyed(in.Key, view, func() error { return st.CreateSession(ctx, ses) }, keyed); err != nil {
		return res, storeErr(err)
	}
	return view, nil
}

// ShowSession returns a session and whether a subscriber is live.
func (s *Escalations) ShowSession(ctx context.Context, id string) (SessionView, error) {
	var res SessionView
	st, err := s.approvalStore()
	if err != nil {
		return res, err
	}
	ses, err := s.session(ctx, st, id)
	if err != nil {
		return res, err
	}
	v := SessionView{Session: ses}
	last, err := s.lastRead(ctx, st, id)
	if err != nil {
		return res, storeErr(err)
	}
	if !last.IsZero() {
		v.LastRead = &last
		v.LiveSubscriber = s.live(last)
	}
	return v, nil
}

func (s *core) session(ctx context.Context, st store.ApprovalStore, id string) (approvals.Session, error) {
	if ids.Kind(id) != ids.Session {
		return approvals.Session{}, errs.E(errs.InvalidID, "not a session id: "+quoteID(id)).Unmet("session ids look like ses:<ULID>")
	}
	ses, err := st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return ses, errs.E(SessionNotFound, "no session "+id+" in this project").On(id)
	}
	if err != nil {
		return ses, storeErr(err)
	}
	return ses, nil
}

func (s *core) live(lastRead time.Time) bool {
	return !lastRead.IsZero() && s.now().Sub(lastRead) < s.subscriberLease()
}
