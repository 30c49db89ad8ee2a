package service

import (
	"context"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/store"
)

// Show returns one approval.
func (s *Escalations) Show(ctx context.Context, id string) (ApprovalView, error) {
	st, err := s.approvalStore()
	if err != nil {
		return ApprovalView{}, err
	}
	a, err := s.approvalRecord(ctx, st, id)
	if err != nil {
		return ApprovalView{}, err
	}
	return s.view(a), nil
}

// ApprovalQuery narrows Escalations.List.
type ApprovalQuery struct {
	SessionID string
	// Pending keeps open questions only (not past their deadline).
	Pending bool
}

// ApprovalList is what Escalations.List returns.
type ApprovalList struct {
	Approvals []ApprovalView `json:"approvals"`
	Count     int            `json:"count"`
}

// List lists approval requests, oldest first.
func (s *Escalations) List(ctx context.Context, q ApprovalQuery) (ApprovalList, error) {
	var res ApprovalList
	st, err := s.approvalStore()
	if err != nil {
		return res, err
	}
	f := store.ApprovalFilter{SessionID: q.SessionID}
	if q.SessionID != "" {
		if _, err := s.session(ctx, st, q.SessionID); err != nil {
			return res, err
		}
	}
	if q.Pending {
		f.State = approvals.Pending
	}
	list, err := st.ListApprovals(ctx, f)
	if err != nil {
		return res, storeErr(err)
	}
	now := s.now()
	out := []ApprovalView{}
	for _, a := range list {
		if q.Pending && approvals.Expired(a, now) {
			continue
		}
		out = append(out, s.view(a))
	}
	return ApprovalList{Approvals: out, Count: len(out)}, nil
}
