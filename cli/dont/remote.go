//go:build !light

package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/dont-cli/dont/internal/client"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/webhook"
	"github.com/spf13/cobra"
)

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

// dontNetMismatch: the light dont that handed a run here was built from
// another revision.
const dontNetMismatch errs.Code = "dont-net-mismatch"

// handsOff: the whole build runs every command itself. A run the light
// build handed here is refused if the two were not built from one
// revision: the pair must be the one built together (split.go). The
// variable is not passed on to what this run starts.
func (a *app) handsOff([]string, string) bool {
	by := a.getenv(envHandedOffBy)
	if by == "" {
		return false
	}
	os.Unsetenv(envHandedOffBy)
	if own := buildRevision(); by != own {
		self, _ := os.Executable()
		a.fail(errs.E(dontNetMismatch, "dont (built from "+by+") and "+dontNetName+" (built from "+own+") are not one build; nothing was run").
			With("dir", filepath.Dir(self)))
		return true
	}
	return false
}

// addBuildCommands adds the commands only this build has.
func (a *app) addBuildCommands(root *cobra.Command) {
	root.AddCommand(a.deliveryPassCommand())
}

// deliveryPassCommand is the hidden `dont __deliver`: the delivery pass
// the light build runs after a write (light.go's deliverDue), here,
// where the webhook sender is linked. It does what the pass after any
// write does, the due deliveries of the project, at most 10, and prints
// nothing, so it gives its caller no power a write does not: unlike
// `hooks deliver` it needs no admin, as a write's own pass does not
// (docs/hooks.md).
func (a *app) deliveryPassCommand() *cobra.Command {
	return &cobra.Command{Use: deliveryPass, Hidden: true, Args: a.argCount(0),
		RunE: func(c *cobra.Command, _ []string) error {
			p, store, err := a.openProjectStore()
			if err != nil {
				return err
			}
			defer store.Close()
			svc := service.New(service.Deps{Store: store, HooksConfig: service.HooksConfig{Store: store}})
			if due, err := store.HasDue(c.Context(), time.Now()); err == nil && due {
				a.deliverDue(c.Context(), svc, p, store)
			}
			return nil
		}}
}
