package tools

import (
	"context"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/service"
)

func init() {
	register("approvals.slack-link", func() *Tool {
		return &Tool{Name: "approvals.slack-link", Summary: "Make a one-time code that links your Slack user to this approver token (docs/approvals.md, Slack).",
			Roles: []string{auth.RoleApprover},
			run: func(ctx context.Context, s *service.Service, _ Args) (Output, error) {
				v, err := s.Slack().CreateLinkCode(ctx)
				if err != nil {
					return Output{}, err
				}
				return Output{Kind: envelope.KindSlackLinkCode, Data: v, Hints: []string{
					"send " + v.Command + " to the dont app in Slack within 10 minutes; the code works once",
					"your clicks on dont's buttons in Slack then answer as " + v.TokenID,
				}}, nil
			}}
	})
}
