package tools

import (
	"context"
	"strings"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
)

// destructive lists the tools whose effect the caller cannot take back:
// they end an entity, a spawn, a request or a credential for good. MCP
// clients read it as destructiveHint.
var destructive = map[string]bool{
	"lock": true, "ignore": true, "spawns.cancel": true, "spawns.manage": true,
	"approvals.cancel": true, "approvals.refuse": true, "confirmations.refuse": true,
	"tokens.revoke": true, "tokens.revoke-all": true, "tokens.manage": true,
}

// Authorize applies the powers of the call's principal: a role list for
// bearer tokens and embedded principals, the spawn's own rules for a
// callback token. Every transport reaches it through CallGated.
func Authorize(ctx context.Context, s *service.Service, t *Tool, args map[string]any) error {
	p := s.PrincipalOf(ctx)
	if p.Role == auth.RoleCallback {
		return s.Credentials.CheckCallback(ctx, p, t.Name, args)
	}
	if !p.May(t.AllowedRoles()) {
		return errs.E(service.Forbidden, "a "+p.Role+" principal may not call "+t.Name+" (allowed: "+strings.Join(t.AllowedRoles(), ", ")+")",
			errs.Step{Command: "dont tools", Description: "list the tools and the roles that may call them"}).
			Unmet("role in " + strings.Join(t.AllowedRoles(), ", "))
	}
	return nil
}

// ForPrincipal reports whether a principal may call the tool at all; MCP
// lists only these.
func (t *Tool) ForPrincipal(p auth.Principal) bool {
	return p.Role != auth.RoleCallback && p.May(t.AllowedRoles())
}

// MayConfirm decides whether a principal may run a held call. The
// confirmer must itself be allowed to call the held tool when that tool
// is privileged (not a harness tool): an approver never runs an admin's
// held tokens.create, an admin never answers an escalation by confirming
// an approver's held approvals.refuse. A harness tool (lock, ignore, …)
// may be confirmed by any approver or admin. Never by the principal that
// asked, and never for an interactive-only action (they are not held).
func MayConfirm(confirmer auth.Principal, held confirm.Pending) error {
	t, ok := Lookup(held.Tool)
	if !ok {
		return errs.E(service.Forbidden, held.ID+" holds an unknown tool "+quote(held.Tool)+"; it cannot run").Unmet("a known tool")
	}
	if held.RequestedBy != "" && held.RequestedBy == confirmer.ID() {
		return errs.E(service.Forbidden, held.ID+" was held for "+held.RequestedBy+", who may not confirm its own call",
			errs.Step{Command: "dont confirmations show " + held.ID, Description: "another approver or admin confirms it"}).Unmet("the confirmer is not the requester")
	}
	if t.Annotations.InteractiveOnly {
		return errs.E(service.Forbidden, held.Tool+" is interactive-only: it runs only when a person confirms it at a client, never as a held call").
			Unmet("not interactive-only")
	}
	privileged := !auth.RoleAllows(auth.RoleHarness, t.AllowedRoles())
	if privileged && !confirmer.May(t.AllowedRoles()) {
		return errs.E(service.Forbidden, "a "+confirmer.Role+" may not confirm "+held.Tool+": only "+strings.Join(t.AllowedRoles(), ", ")+" may run it",
			errs.Step{Command: "dont confirmations show " + held.ID, Description: "a principal allowed to call " + held.Tool + " confirms it"}).
			Unmet("the confirmer may call " + held.Tool)
	}
	return nil
}
