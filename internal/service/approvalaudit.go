package service

import (
	"context"
	"fmt"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/store"
)

// AuditFindingsShown is how many findings a failed audit's error names.
const AuditFindingsShown = 100

// Audit runs the frame-log guard over the whole store (`dont
// approvals audit`, and what CI and tests consume): every question has
// exactly one question frame and, once ended, exactly one ending frame
// carrying its verdict; every frame names a known request. Findings fail
// it (frame-log-inconsistent, exit 3), and the report still comes back
// with them; a clean report says how much it looked at, so "nothing
// found" never reads like "nothing read".
func (s *Escalations) Audit(ctx context.Context) (approvals.AuditReport, error) {
	rep, err := s.auditApprovals(ctx)
	if err != nil || rep.OK() {
		return rep, err
	}
	e := errs.E(FrameLogInconsistent, fmt.Sprintf("the frame log is inconsistent: %d finding(s) over %d requests and %d frames", len(rep.Findings), rep.Requests, rep.Frames))
	// The error names the first findings only: one response carries it,
	// and a log broken everywhere would pass a Lambda's 6 MB
	// (docs/design.md, "Paginated reads").
	for i, f := range rep.Findings {
		if i == AuditFindingsShown {
			e.Unmet(fmt.Sprintf("and %d more finding(s)", len(rep.Findings)-i))
			break
		}
		e.Unmet(f.String())
	}
	return rep, e
}

func (s *core) auditApprovals(ctx context.Context) (approvals.AuditReport, error) {
	st, err := s.approvalStore()
	if err != nil {
		return approvals.AuditReport{}, err
	}
	// Frames are read before the records: a frame and its record's
	// announced mark commit together, so every frame read has its record
	// marked. The audit is meant for a quiescent log (a test's final state,
	// CI): a question resolved while it reads may show as unannounced.
	sessions, err := st.ListSessions(ctx)
	if err != nil {
		return approvals.AuditReport{}, storeErr(err)
	}
	var frames []approvals.Frame
	for _, ses := range sessions {
		for after := int64(0); ; {
			page, err := st.Frames(ctx, ses.ID, after, 1000)
			if err != nil {
				return approvals.AuditReport{}, storeErr(err)
			}
			if len(page) == 0 {
				break
			}
			frames = append(frames, page...)
			after = page[len(page)-1].Cursor
		}
	}
	records, err := st.ListApprovals(ctx, store.ApprovalFilter{})
	if err != nil {
		return approvals.AuditReport{}, storeErr(err)
	}
	return approvals.Audit(records, frames), nil
}
