package main

import (
	"github.com/dont-cli/dont/internal/errs"
	"github.com/spf13/cobra"
)

// rootRun answers `dont` alone with help and `dont <unknown>` with a usage
// error (exit 2) rather than cobra's bare error, which would surface as an
// internal error (exit 4). Found by FuzzCommandLine.
func (a *app) rootRun(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return c.Help()
	}
	return errs.E(errs.Usage, "unknown command "+quoteArg(args[0])+" for dont",
		errs.Step{Command: "dont --help", Description: "list the commands"})
}

func quoteArg(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return "\"" + s + "\""
}
