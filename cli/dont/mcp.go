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

// mcpCommand is `dont mcp`: every tool over MCP on stdin/stdout, in
// harness mode, against the same embedded store the CLI uses.
func (a *app) mcpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve every dont tool over MCP on stdin/stdout (harness mode; results are envelopes).",
		Args:  a.argCount(0),
		RunE: func(c *cobra.Command, _ []string) error {
			// A harness's calls come concurrently: every CPU.
			oneproc.Restore()
			a.mode = spawn.ModeHarness // never direct: no provider is built
			a.mcpServing = true
			srv := mcp.New(envelope.CLIVersion, func(_ context.Context, t *tools.Tool) (*service.Service, func(), error) {
				return a.embedded(t)
			})
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
		},
	}
}
