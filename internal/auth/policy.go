package auth

// Principal is who is calling.
type Principal struct {
	Role    string
	TokenID string // bearer tokens
	Project string
	// Callback tokens are scoped to one spawn.
	RequestID string
}

// RoleAllows reports whether a bearer role may call a tool whose allowed
// roles are given. Callback principals are checked by the spawn rules
// (see service.CheckCallback), never by role lists.
func RoleAllows(role string, allowed []string) bool {
	for _, r := range allowed {
		if r == role {
			return true
		}
	}
	return false
}
