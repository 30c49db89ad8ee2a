package approvals

// TwoPersonFrom is the person's two-person rule: a question for this tier
// or a wider one is approved only by two different approvers (unset: no
// rule). Only a person sets it (two_person_from).
type TwoPersonFrom Tier

// Covers reports whether the rule covers a question for tier to.
func (r TwoPersonFrom) Covers(to Tier) bool {
	from := Tier(r)
	if !from.Valid() || !to.Valid() {
		return false
	}
	return Rank(to) >= Rank(from)
}

// AwaitsSecondApproval reports whether a is a two-person question approved
// once and still open.
func AwaitsSecondApproval(a Approval) bool {
	return a.TwoPerson && a.State == Pending && a.FirstApproval != nil
}
