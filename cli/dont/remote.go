package main

import (
	"context"
	"net/http"

	"github.com/dont-cli/dont/internal/client"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/webhook"
)

// apiCaller is what the verbs call the API at --endpoint through
// (internal/client; tests put a fake in its place).
type apiCaller interface {
	CallConfirmed(ctx context.Context, tool string, args map[string]any, confirmed bool) (envelope.Envelope, error)
	Get(ctx context.Context, path string) (envelope.Envelope, error)
}

// apiClient is the client of the API at ep, with token as its bearer
// token ("" for none).
func (a *app) apiClient(ep, token string) apiCaller {
	return &client.Client{Endpoint: ep, Token: token, Header: capsHeader()}
}

// capsHeader declares this CLI's capabilities on every request.
func capsHeader() http.Header {
	return http.Header{confirm.CapsHeader: []string{confirm.CLICaps}}
}

// webhookSender delivers webhooks over HTTP, to the addresses policy
// allows.
func webhookSender(policy hooks.AddrPolicy) service.Sender { return webhook.New(policy) }

// deliverDue attempts the due webhook deliveries (best effort: what is
// left stays due).
func (a *app) deliverDue(ctx context.Context, svc *service.Service, p project.Project, store *sqlite.Store) {
	if svc.HooksConfig.Sender == nil {
		cfg, err := a.hooksConfig(p, store)
		if err != nil {
			return
		}
		svc.HooksConfig = a.withSlackSender(cfg, store)
	}
	svc.Hooks.Deliver(ctx, 10) //nolint:errcheck // best effort: what is left stays due
}
