package tools

import (
	"context"
	"encoding/json"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/service"
)

// The passkey ceremonies of the approvals page (docs/approvals.md,
// "Passkeys"). Only an approver token calls them: a passkey belongs to the
// approver it was registered under. They are not MCP tools — an agent has
// no authenticator to answer them with.
func init() {
	RegisterGroup("passkeys", "Register an approver's passkey and answer with it (the approvals page).")
	approvers := []string{auth.RoleApprover}
	register("passkeys.register-begin", func() *Tool {
		return &Tool{Name: "passkeys.register-begin", Summary: "Begin registering a passkey for the calling approver: the options for navigator.credentials.create.",
			Roles: approvers, Annotations: Annotations{Presence: true},
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return data[service.PasskeyOptions](envelope.KindPasskeyOptions)(s.Passkeys.RegisterBegin(ctx))
			}}
	})
	register("passkeys.register-finish", func() *Tool {
		return &Tool{Name: "passkeys.register-finish", Summary: "Store the passkey the browser made for a registration challenge.",
			Roles: approvers, Annotations: Annotations{Presence: true},
			Params: []Param{{Name: "challenge", Type: String, Required: true, Description: "the challenge of passkeys.register-begin"},
				{Name: "credential", Type: String, Required: true, Description: "the browser's new PublicKeyCredential, as JSON"}},
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				return data[service.PasskeyView](envelope.KindPasskey)(s.Passkeys.RegisterFinishResuming(ctx, a.Str("challenge"), json.RawMessage(a.Str("credential")), o.ResumeSince))
			}}
	})
	register("passkeys.approve-begin", func() *Tool {
		return &Tool{Name: "passkeys.approve-begin", Summary: "Issue the single-use passkey challenge of an approve, bound to the question and what it shows now.",
			Roles: approvers, Annotations: Annotations{Presence: true},
			Params:    []Param{{Name: "id", Type: String, Required: true, Positional: true, Description: "approval request id (apr:…)"}},
			approvals: true,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return data[service.PasskeyOptions](envelope.KindPasskeyOptions)(s.Passkeys.ApproveBegin(ctx, a.Str("id")))
			}}
	})
}
