package tools

import (
	"context"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/service"
)

func init() {
	register("whoami", func() *Tool {
		return &Tool{Name: "whoami", Summary: "Show who calls: the principal, its roles and its project.", Annotations: Annotations{ReadOnly: true},
			run: func(ctx context.Context, s *service.Service, _ Args) (Output, error) {
				return Output{Kind: envelope.KindWhoAmI, Data: s.Credentials.WhoAmI(ctx)}, nil
			}}
	})
}
