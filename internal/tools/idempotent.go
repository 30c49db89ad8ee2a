package tools

// idempotent lists the tools, beside the read-only ones, that a repeat
// with the same arguments changes nothing further: a closure or an answer
// that the first call already made (a second lock, ignore, cancel,
// refusal or revocation is refused or reported as a duplicate), a sweep,
// a wait. MCP clients read it as idempotentHint.
var idempotent = map[string]bool{
	"lock": true, "ignore": true, "spawns.cancel": true, "sweep": true,
	"approvals.cancel": true, "approvals.approve": true, "approvals.refuse": true, "approvals.wait": true, "approvals.sweep": true,
	"confirmations.confirm": true, "confirmations.refuse": true,
	"tokens.revoke": true, "tokens.revoke-all": true,
}

// Idempotent reports whether repeating a call of the tool with the same
// arguments has no further effect.
func (t *Tool) Idempotent() bool { return t.Annotations.ReadOnly || idempotent[t.Name] }
