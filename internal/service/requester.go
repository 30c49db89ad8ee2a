package service

import (
	"context"
	"strings"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/spawn"
)

// NotRequester: an agent acted on a spawn or a question another agent
// asked for. Only the requester, the spawn's own callback token or a
// person may cancel, heartbeat or resolve a spawn, or withdraw a question.
const NotRequester errs.Code = "not-requester"

// unmetRequester is the clause a not-requester refusal reports.
const unmetRequester = "the requester, its callback token or a person"

// mayActOnSpawn lets the call's principal cancel, heartbeat or resolve sp
// only if it is a person's, sp's own callback token, or the principal
// that issued sp. A spawn recorded before requesters were kept names none
// and stays open to every harness, as it was.
func (s *core) mayActOnSpawn(ctx context.Context, sp spawn.Spawn, what string) error {
	p := s.PrincipalOf(ctx)
	switch {
	case p.IsPerson():
		return nil
	case p.Role == auth.RoleCallback:
		if p.RequestID == sp.ID {
			return nil
		}
	case sp.RequestedBy == "" || sameAgent(sp.RequestedBy, s.actor(ctx)):
		return nil
	}
	return errs.E(NotRequester, sp.ID+" was requested by "+quoteID(sp.RequestedBy)+"; a "+p.Role+" that did not ask for it may not "+what+" it").
		Unmet(unmetRequester).With("request", sp.ID).With("requester", sp.RequestedBy)
}

// mayWithdraw lets the call's principal cancel question a only if it is a
// person's or the principal that asked.
func (s *core) mayWithdraw(ctx context.Context, a approvals.Approval) error {
	p := s.PrincipalOf(ctx)
	if p.IsPerson() || a.Requester == "" || sameAgent(a.Requester, s.actor(ctx)) {
		return nil
	}
	return errs.E(NotRequester, a.ID+" was asked by "+quoteID(a.Requester)+"; a "+p.Role+" that did not ask may not withdraw it").On(a.ID).
		Unmet(unmetRequester).With("request", a.ID).With("requester", a.Requester)
}

// withdrawable reads question id and applies mayWithdraw; a question that
// cannot be read is left to decide, which reports it.
func (s *core) withdrawable(ctx context.Context, id string) error {
	st, err := s.approvalStore()
	if err != nil {
		return err
	}
	a, err := s.approvalRecord(ctx, st, id)
	if err != nil {
		return err
	}
	return s.mayWithdraw(ctx, a)
}

// sameAgent reports whether two principal ids name the same agent. A
// token's id names its token; on the embedded transports a principal has
// no token, only the name it declares (DONT_AUTHOR), as the owner
// ("agent-7"), as a harness-signalled CLI ("harness:agent-7") or as
// `dont mcp` ("mcp:agent-7"): one name is one agent there, so that a
// subagent run with DONT_REQUEST_ID resolves the spawn its harness asked
// for through any of them (docs/security.md: harnesses sharing an
// embedded project are told apart only by the names they declare).
func sameAgent(a, b string) bool {
	return a == b || declaredName(a) == declaredName(b)
}

func declaredName(id string) string {
	for _, prefix := range []string{"harness:", "mcp:"} {
		if rest, ok := strings.CutPrefix(id, prefix); ok {
			return rest
		}
	}
	return id
}
