package approvals

// DefaultSessionCeiling is the widest tier an agent may open a session at
// when the person set no ceiling: above it a session needs a person
// (docs/security.md, "Who sets an agent's power"). An agent that could
// open its sessions at danger-full-access itself would make the one hop
// an escalation grants meaningless.
const DefaultSessionCeiling = WorkspaceWrite

// Rank is a tier's place in Tiers, narrowest first (0), or -1 for a name
// that is no tier.
func Rank(t Tier) int {
	for i, x := range Tiers {
		if x == t {
			return i
		}
	}
	return -1
}

// CeilingOrDefault is the ceiling in force: c, or DefaultSessionCeiling
// when c is unset.
func CeilingOrDefault(c Tier) Tier {
	if c == "" {
		return DefaultSessionCeiling
	}
	return c
}

// AboveCeiling reports whether a session at t lies above the ceiling c
// (unset: DefaultSessionCeiling). A ceiling that is no tier admits
// nothing above read-only: a bad setting fails closed.
func AboveCeiling(t, c Tier) bool {
	limit := Rank(CeilingOrDefault(c))
	if limit < 0 {
		limit = Rank(ReadOnly)
	}
	return Rank(t) > limit
}
