package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/dont-cli/dont/cli/dont/confirmclient"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/tools"
)

// controllingTerminal is where a person's answer is read, as sudo and ssh
// read passwords: never stdin, which an agent's pipe may feed.
const controllingTerminal = "/dev/tty"

// harnessSignal names the signal that says an agent runs this process, or
// "". Any one makes the embedded CLI a harness principal. stdout not being
// a terminal picks the spawn mode but is not one: a person piping to jq is
// still a person, and presence is proven by the controlling terminal.
func (a *app) harnessSignal() string {
	switch {
	case spawn.DetectMode(spawn.Signals{HarnessEnv: a.getenv("DONT_HARNESS"), StdoutTTY: true}) == spawn.ModeHarness:
		return "DONT_HARNESS"
	case a.getenv("DONT_REQUEST_ID") != "":
		return "DONT_REQUEST_ID"
	case a.mcpServing:
		return "dont mcp"
	}
	return ""
}

// principal is who an embedded call runs as: a harness under any harness
// signal, else the project's owner — named by the passphrase record once
// the person proved themselves (provePerson), never by DONT_AUTHOR.
func (a *app) principal() auth.Principal {
	if a.harnessSignal() != "" {
		return auth.Harness("harness:" + a.author())
	}
	if a.person != "" {
		return auth.Owner(a.person)
	}
	return auth.UnprovenOwner(a.author())
}

// needsProof reports whether err refused an unproven owner what only a
// person decides (a session above the ceiling, another agent's spawn or
// question, a move of an entity under review): the person at their
// terminal proves themselves and the call runs again.
func needsProof(err error) bool {
	e := errs.As(err)
	if e == nil {
		return false
	}
	switch e.Code {
	case service.SessionAboveCeiling, service.NotRequester:
		return true
	case errs.SpawnPending:
		return slices.Contains(e.UnmetClauses, service.UnmetUnderReview)
	}
	return false
}

// personTerminal opens the controlling terminal for an answer only a
// person may give, or refuses (exit 2) under a harness signal or when the
// process has none.
func (a *app) personTerminal(what string) (*os.File, error) {
	if sig := a.harnessSignal(); sig != "" {
		return nil, errs.E(confirm.PersonRequired, what+" is a person's answer, and "+sig+" says an agent runs this command; nothing was sent").
			Unmet("no harness signal")
	}
	f, err := os.OpenFile(controllingTerminal, os.O_RDWR, 0)
	if err != nil {
		return nil, errs.E(confirm.PersonRequired, what+" is a person's answer, read from the controlling terminal, and this process has none; nothing was sent").
			Unmet("a controlling terminal").Wrap(err)
	}
	return f, nil
}

// askPerson asks the person at the controlling terminal to confirm a
// presence action of the embedded CLI: preview and prompt on the
// terminal, one line from it, then a yes is proven by the approver
// passphrase (proveAnswer). --yes does not answer it.
func (a *app) askPerson(ctx context.Context, t *tools.Tool, args map[string]any) (bool, error) {
	tty, err := a.personTerminal("dont " + strings.ReplaceAll(t.Name, ".", " "))
	if err != nil {
		return false, err
	}
	defer tty.Close()
	for _, line := range a.promptLines(t, args, tty) {
		fmt.Fprintln(tty, line)
	}
	fmt.Fprint(tty, confirm.Prompt(confirm.Display(t.Name)))
	answer, err := confirmclient.ReadLine(ctx, tty)
	fmt.Fprintln(tty)
	if err != nil && ctx.Err() != nil {
		return false, errs.E(errs.Interrupted, "interrupted at the prompt; nothing was sent")
	}
	return a.proveAnswer(ctx, tty, confirm.Yes(answer))
}
