//go:build light

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/spf13/cobra"
)

// The light build (split.go): what it leaves out, dont-net does.

// dontNetMissing: the light build found no dont-net to hand a run to.
const dontNetMissing errs.Code = "dont-net-missing"

// handsOff runs argv in dont-net when it needs what this build leaves
// out, before anything else is done: the process is replaced, so the
// same PID, streams, signals and exit code are dont-net's. It returns
// only when it did not hand the run over, or could not (then the error
// envelope is printed).
func (a *app) handsOff(argv []string, tool string) bool {
	if !needsNet(argv, tool, a.getenv, a.stdoutTTY()) && !a.mayUseStoredLogin(argv) {
		return false
	}
	a.fail(a.handOff())
	return true
}

// dontNet is the path of dont-net: beside this executable (symbolic
// links resolved), never looked up on PATH, so that the pair is always
// the one built together.
func dontNet() (string, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return "", errs.E(dontNetMissing, "cannot find this executable to find "+dontNetName+" beside it").Wrap(err)
	}
	dir := filepath.Dir(self)
	bin := filepath.Join(dir, dontNetName)
	if _, err := os.Stat(bin); err != nil {
		return "", errs.E(dontNetMissing, "this command needs "+bin+", the whole dont this light build hands it to").Wrap(err).With("dir", dir)
	}
	return bin, nil
}

// handOff replaces this process with dont-net running the same command
// line; it returns only the error that kept it from doing so.
func (a *app) handOff() error {
	bin, err := dontNet()
	if err != nil {
		return err
	}
	err = syscall.Exec(bin, os.Args, append(os.Environ(), envHandedOffBy+"="+buildRevision()))
	return errs.E(dontNetMissing, "cannot run "+bin+": "+err.Error()).Wrap(err).With("dir", filepath.Dir(bin))
}

// The commands of netcommands.go run in dont-net (needsNet sends them
// there before their flags are parsed; these runs are for a path it
// missed).
func (a *app) serveFlags(c *cobra.Command) {
	c.DisableFlagParsing = true
	c.RunE = func(*cobra.Command, []string) error { return a.handOff() }
}

func (a *app) serveMCP(*cobra.Command) error { return a.handOff() }

func (a *app) spawnsRun(context.Context, spawnsRunFlags) error { return a.handOff() }

// provider is direct mode's: needsNet sends every run that may reach it
// to dont-net, which builds it.
func (a *app) provider(project.Project, project.Config) (service.Reasoner, error) {
	return nil, errs.E(errs.Internal, "the light build has no LLM provider; "+dontNetName+" runs direct mode")
}

// apiClient: needsNet sends every run with an endpoint to dont-net.
func (a *app) apiClient(string, string) apiCaller { return noAPI{} }

type noAPI struct{}

func (noAPI) CallConfirmed(context.Context, string, map[string]any, bool) (envelope.Envelope, error) {
	return noAPIError()
}

func (noAPI) Get(context.Context, string) (envelope.Envelope, error) { return noAPIError() }

func noAPIError() (envelope.Envelope, error) {
	return envelope.Envelope{}, errs.E(errs.Internal, "the light build has no API client; "+dontNetName+" calls endpoints")
}

// webhookSender: this build sends no webhooks (deliverDue has dont-net
// do it).
func webhookSender(hooks.AddrPolicy) service.Sender { return nil }

// deliverDue has dont-net's delivery pass (deliveryPassCommand) attempt
// the due deliveries, bounded by ctx: what it does not finish stays due,
// as in the whole build.
func (a *app) deliverDue(ctx context.Context, _ *service.Service, p project.Project, _ *sqlite.Store) {
	bin, err := dontNet()
	if err != nil {
		return
	}
	c := exec.CommandContext(ctx, bin, deliveryPass)
	c.Env = append(os.Environ(), "DONT_PROJECT_DIR="+p.Root, envHandedOffBy+"="+buildRevision())
	// At the bound, stop it as a person's Ctrl-C would: an attempt it
	// claims and does not finish falls due again with its webhook-id.
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	c.WaitDelay = time.Second
	c.Run() //nolint:errcheck // best effort: what is left stays due
}

// addBuildCommands: the light build has no commands of its own.
func (a *app) addBuildCommands(*cobra.Command) {}
