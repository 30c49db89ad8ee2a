package service

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/store"
)

// InboxLease is the subscriber-lease key of the project's inbox. A person
// who reads the inbox of every session can answer any session's question,
// so that read renews one lease that counts for every session
// (docs/approvals.md, "The web page").
const InboxLease = "*"

// DefaultInboxEndings is how many recent endings an inbox read returns.
const DefaultInboxEndings = 50

// InboxInput reads the project's inbox.
type InboxInput struct {
	// SessionID narrows the questions and endings to one session (the
	// sessions list stays whole, for a filter).
	SessionID string
	// Subscriber names the reader for its subscriber lease.
	Subscriber string
	// Endings bounds the recent endings (DefaultInboxEndings if zero).
	Endings int
}

// InboxViewer is who read the inbox, and whether that principal may
// answer what it shows.
type InboxViewer struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Role      string `json:"role"`
	CanAnswer bool   `json:"can_answer"`
	// Watching is what the read made answerable: InboxLease (every
	// session), one session's id, or empty when the reader cannot answer
	// (its read makes nothing look watched).
	Watching string `json:"watching,omitempty"`
}

// InboxSession is a session as the inbox lists it.
type InboxSession struct {
	approvals.Session
	Pending int `json:"pending"`
}

// Inbox is every open question of the project across sessions, oldest
// first, the most recent endings, newest first, and the names of the
// tokens and sessions they mention, so that a person reads names.
type Inbox struct {
	Viewer   InboxViewer       `json:"viewer"`
	Sessions []InboxSession    `json:"sessions"`
	Pending  []ApprovalView    `json:"pending"`
	Endings  []ApprovalView    `json:"endings"`
	Names    map[string]string `json:"names"`
	Now      time.Time         `json:"now"`
}

// Inbox reads the project's open questions and recent endings. A reader
// who could answer (an approver token, the owner) renews the inbox lease
// (or, narrowed to a session, that session's): the escalations it shows
// can then be asked. A harness's read renews nothing.
func (s *Escalations) Inbox(ctx context.Context, in InboxInput) (Inbox, error) {
	var res Inbox
	st, err := s.approvalStore()
	if err != nil {
		return res, err
	}
	if in.Endings < 0 || in.Endings > 500 {
		return res, errs.E(errs.InvalidArgument, "`endings` is between 0 and 500").Unmet("0 <= endings <= 500")
	}
	if in.Endings == 0 {
		in.Endings = DefaultInboxEndings
	}
	if in.SessionID != "" {
		if _, err := s.session(ctx, st, in.SessionID); err != nil {
			return res, err
		}
	}
	p := s.PrincipalOf(ctx)
	res.Viewer = InboxViewer{ID: p.ID(), Role: p.Role, CanAnswer: p.Holds(auth.RoleApprover)}
	if res.Viewer.CanAnswer {
		lease := InboxLease
		if in.SessionID != "" {
			lease = in.SessionID
		}
		sub := in.Subscriber
		if sub == "" {
			sub = s.by(ctx, "")
		}
		if sub == "" {
			sub = "anonymous"
		}
		if err := st.TouchSubscriber(ctx, lease, sub, s.now()); err != nil {
			return res, storeErr(err)
		}
		res.Viewer.Watching = lease
	}
	sessions, err := st.ListSessions(ctx)
	if err != nil {
		return res, storeErr(err)
	}
	records, err := st.ListApprovals(ctx, store.ApprovalFilter{})
	if err != nil {
		return res, storeErr(err)
	}
	now := s.now()
	res.Now = now
	pending := map[string]int{}
	res.Pending, res.Endings = []ApprovalView{}, []ApprovalView{}
	for _, a := range records {
		open := a.State == approvals.Pending && !approvals.Expired(a, now)
		if open {
			pending[a.SessionID]++
		}
		if in.SessionID != "" && a.SessionID != in.SessionID {
			continue
		}
		switch {
		case open:
			res.Pending = append(res.Pending, s.view(a))
		case a.State == approvals.Resolved:
			res.Endings = append(res.Endings, s.view(a))
		}
	}
	sort.SliceStable(res.Endings, func(i, j int) bool { return endedAt(res.Endings[i]).After(endedAt(res.Endings[j])) })
	if len(res.Endings) > in.Endings {
		res.Endings = res.Endings[:in.Endings]
	}
	res.Sessions = make([]InboxSession, len(sessions))
	for i, ses := range sessions {
		res.Sessions[i] = InboxSession{Session: ses, Pending: pending[ses.ID]}
	}
	res.Names = s.inboxNames(ctx, res)
	if n, ok := res.Names[res.Viewer.ID]; ok {
		res.Viewer.Name = n
	}
	return res, nil
}

func endedAt(v ApprovalView) time.Time {
	if v.ResolvedAt != nil {
		return *v.ResolvedAt
	}
	return v.CreatedAt
}

// inboxNames names the sessions and tokens the inbox mentions. A token
// that cannot be read (revoked ones stay readable) keeps its id.
func (s *core) inboxNames(ctx context.Context, in Inbox) map[string]string {
	names := map[string]string{}
	for _, ses := range in.Sessions {
		if ses.Name != "" {
			names[ses.ID] = ses.Name
		}
	}
	tokenIDs := []string{in.Viewer.ID}
	for _, ses := range in.Sessions {
		tokenIDs = append(tokenIDs, ses.OpenedBy)
	}
	for _, list := range [][]ApprovalView{in.Pending, in.Endings} {
		for _, a := range list {
			tokenIDs = append(tokenIDs, a.Requester, a.AnsweredBy)
		}
	}
	if s.Tokens == nil {
		return names
	}
	for _, id := range tokenIDs {
		if _, seen := names[id]; seen || !strings.HasPrefix(id, ids.Token+":") {
			continue
		}
		if t, err := s.Tokens.GetToken(ctx, id); err == nil && t.Name != "" {
			names[id] = t.Name
		}
	}
	return names
}

// lastRead is the latest read that makes a session answerable: of the
// session's frames, or of the project's inbox.
func (s *core) lastRead(ctx context.Context, st store.ApprovalStore, sessionID string) (time.Time, error) {
	last, err := st.LastRead(ctx, sessionID)
	if err != nil {
		return last, err
	}
	inbox, err := st.LastRead(ctx, InboxLease)
	if err != nil {
		return last, err
	}
	if inbox.After(last) {
		last = inbox
	}
	return last, nil
}
