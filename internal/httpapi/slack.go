package httpapi

import (
	"context"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/slackapp"
)

// slackHandler is the Slack app's endpoint over this server's backend.
// Its refusals are this server's error envelopes.
func (s *server) slackHandler(o SlackOptions) *slackapp.Handler {
	project := func(ctx context.Context) (slackapp.Project, error) {
		b, ok := s.opts.Backend.(SlackBackend)
		if !ok {
			return slackapp.Project{}, errs.E(service.SlackUnavailable, "this server's backend serves no Slack app")
		}
		p, err := b.SlackProject(ctx, o.Project)
		if err != nil {
			return slackapp.Project{}, err
		}
		return slackapp.Project{Service: p.Service, Replays: p.Idempotency}, nil
	}
	return slackapp.NewHandler(slackapp.Config{
		SigningSecret: o.SigningSecret, Project: project, PublicURL: o.PublicURL,
		ResponseURLPrefix: o.ResponseURLPrefix, HTTPClient: o.HTTPClient, Clock: s.opts.Clock, Log: s.log,
	}, s.fail)
}
