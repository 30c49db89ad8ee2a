package service

import (
	"context"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/store"
)

// SessionSummary is one session of a SessionList: its default tier, who
// opened it, how many of its questions are open and whether a client that
// could answer is watching it.
type SessionSummary struct {
	SessionView
	OpenQuestions int `json:"open_questions"`
}

// SessionList is what Escalations.ListSessions returns: every session of
// the project, oldest first.
type SessionList struct {
	Sessions []SessionSummary `json:"sessions"`
	Count    int              `json:"count"`
}

// ListSessions lists the project's sessions, oldest first, each with its
// count of open questions (pending and not past their deadline), so that a
// lost ses: id can be found again.
func (s *Escalations) ListSessions(ctx context.Context) (SessionList, error) {
	res := SessionList{Sessions: []SessionSummary{}}
	st, err := s.approvalStore()
	if err != nil {
		return res, err
	}
	sessions, err := st.ListSessions(ctx)
	if err != nil {
		return res, storeErr(err)
	}
	pending, err := st.ListApprovals(ctx, store.ApprovalFilter{State: approvals.Pending})
	if err != nil {
		return res, storeErr(err)
	}
	now := s.now()
	open := map[string]int{}
	for _, a := range pending {
		if a.Asked && !approvals.Expired(a, now) {
			open[a.SessionID]++
		}
	}
	for _, ses := range sessions {
		v := SessionSummary{SessionView: SessionView{Session: ses}, OpenQuestions: open[ses.ID]}
		last, err := st.LastRead(ctx, ses.ID)
		if err != nil {
			return res, storeErr(err)
		}
		if !last.IsZero() {
			v.LastRead = &last
			v.LiveSubscriber = s.live(last)
		}
		res.Sessions = append(res.Sessions, v)
	}
	res.Count = len(res.Sessions)
	return res, nil
}
