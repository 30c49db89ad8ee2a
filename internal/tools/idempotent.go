package tools

// idempotent lists the tools, beside the read-only ones, that a repeat
// with the same arguments changes nothing further: a closure or an answer
// that the first call already made (a second lock, ignore, cancel,
// refusal, revocation or hook removal is refused or reported as a
// duplicate), a sweep, a wait. MCP clients read it as idempotentHint.
var idempotent = map[string]bool{
	"lock": true, "ignore": true, "spawns.cancel": true, "sweep": true,
	"approvals.cancel": true, "approvals.approve": true, "approvals.refuse": true, "approvals.wait": true, "approvals.sweep": true,
	"confirmations.confirm": true, "confirmations.refuse": true,
	"tokens.revoke": true, "tokens.revoke-all": true,
	"hooks.remove": true,
}

// rerunSafe lists the tools that are not idempotent but whose repeat is
// harmless, so a keyed call cut by a crash may simply run again
// (docs/proof.md, "Idempotency across crashes"): hooks.deliver attempts
// only the deliveries due now, as dont serve's loop does every second
// (a delivered message is not due again; a receiver deduplicates by
// webhook-id); approvals.slack-link makes another one-time code for the
// same approver token, and the lost one expires unused. They are not
// Idempotent: a repeat does have an effect, so MCP clients are not told
// otherwise. passkeys.register-begin and passkeys.approve-begin issue
// another single-use challenge (for the same approver, and the same
// question as shown), and the lost one expires unanswered.
var rerunSafe = map[string]bool{"hooks.deliver": true, "approvals.slack-link": true,
	"passkeys.register-begin": true, "passkeys.approve-begin": true}

// resumesKey lists the tools that, under an Idempotency-Key whose earlier
// run was cut by a crash, resume from what that run wrote instead of
// refusing with idempotency-outcome-unknown (CallOptions.ResumeSince):
// escalate re-attaches to the question it asked, or asks if it asked none;
// hooks.test reports the test message it queued, or tests if it queued
// none; passkeys.register-finish reports the passkey it stored; guess
// answers from the spawn it issued, or issues one if it issued none.
var resumesKey = map[string]bool{"escalate": true, "hooks.test": true, "passkeys.register-finish": true, "guess": true}

// ResumesKey reports whether a keyed call of the tool cut by a crash is
// resumed by its retry (resumesKey).
func (t *Tool) ResumesKey() bool { return resumesKey[t.Name] }

// Idempotent reports whether repeating a call of the tool with the same
// arguments has no further effect.
func (t *Tool) Idempotent() bool { return t.Annotations.ReadOnly || idempotent[t.Name] }

// RerunSafe reports whether a keyed call of the tool whose outcome was
// lost may run again under its key: it is Idempotent, or its repeat is
// harmless.
func (t *Tool) RerunSafe() bool { return t.Idempotent() || rerunSafe[t.Name] }
