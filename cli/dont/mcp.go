package main

import (
	"context"
	"fmt"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/mcp"
	"github.com/dont-cli/dont/internal/oneproc"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	"github.com/spf13/cobra"
)

// serveMCP is the run of `dont mcp`.
func (a *app) serveMCP(c *cobra.Command) error {
	// A harness's calls come concurrently: every CPU.
	oneproc.Restore()
	a.mode = spawn.ModeHarness // never direct: no provider is built
	a.mcpServing = true
	srv := mcp.New(envelope.CLIVersion, func(_ context.Context, t *tools.Tool) (*service.Service, func(), error) {
		return a.embedded(t)
	})
	if on, _ := c.Flags().GetBool("permission-prompt"); on {
		srv.AddPermissionPrompt()
	}
	err := srv.Run(c.Context(), a.stdin, a.stdout)
	if err == nil {
		return nil
	}
	// stdout is the protocol stream: report on stderr only.
	e := errs.E(errs.Internal, "mcp: "+err.Error()).Wrap(err)
	if c.Context().Err() != nil {
		e = errs.E(errs.Interrupted, "mcp: interrupted").Wrap(err)
	}
	fmt.Fprintln(a.stderr, "error:", visible.Line(e.Message))
	a.exit = present.Exit(e)
	return nil
}
