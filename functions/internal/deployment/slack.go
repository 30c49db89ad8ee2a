package deployment

import (
	"context"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
)

// SlackProject implements httpapi.SlackBackend: the deployment's Slack
// app answers for the one project its configuration names
// (DONT_SLACK_PROJECT); a Slack request carries no bearer token, its
// signature is its authority.
func (b *Backend) SlackProject(_ context.Context, name string) (httpapi.Project, error) {
	if name == "" {
		return httpapi.Project{}, errs.E(service.SlackUnavailable, "this deployment's Slack app names no project (DONT_SLACK_PROJECT)")
	}
	if p, ok := b.cached(name); ok {
		return p, nil
	}
	return b.keep(name, b.build(b.open(name))), nil
}
