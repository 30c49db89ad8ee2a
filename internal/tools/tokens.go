package tools

import (
	"context"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/service"
)

func init() {
	RegisterGroup("tokens", "Manage API bearer tokens (admin).")
	admin := []string{auth.RoleAdmin}
	register("tokens.create", func() *Tool {
		return &Tool{Name: "tokens.create", Summary: "Create a bearer token; it is shown once.", Roles: admin,
			Annotations: Annotations{PersonOnly: true},
			Params: []Param{
				{Name: "role", Type: String, Required: true, Enum: auth.Roles, Description: "harness, approver or admin"},
				{Name: "name", Type: String, Description: "a label"},
			},
			// The token and a keyed call's response are one commit.
			answer: presentBy(CreatedToken),
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				return CreatedToken(s.Credentials.CreateKeyed(ctx, a.Str("role"), a.Str("name"), o.Key))
			}}
	})
	register("tokens.list", func() *Tool {
		return &Tool{Name: "tokens.list", Summary: "List bearer tokens (never their secrets).", Roles: admin, Annotations: Annotations{ReadOnly: true},
			run: func(ctx context.Context, s *service.Service, _ Args) (Output, error) {
				return data[service.TokenList](envelope.KindTokens)(s.Credentials.List(ctx))
			}}
	})
	register("tokens.revoke", func() *Tool {
		return &Tool{Name: "tokens.revoke", Summary: "Revoke a bearer token at once.", Roles: admin,
			Annotations: Annotations{PersonOnly: true},
			Params:      []Param{{Name: "id", Type: String, Required: true, Positional: true, Description: "token id (tok:…)"}},
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return token(s.Credentials.Revoke(ctx, a.Str("id")))
			}}
	})
}
