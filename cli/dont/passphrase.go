package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/dont-cli/dont/cli/dont/confirmclient"
	"github.com/dont-cli/dont/cli/dont/render"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/passphrase"
	"github.com/dont-cli/dont/internal/personal"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	"github.com/spf13/cobra"
)

// The approver passphrase (docs/security.md, "What only a person may do").
// What only a person may do at the embedded CLI needs it typed at the
// controlling terminal; its record — the person's name and an argon2id
// hash — lives in the person's own folder for the project
// (internal/personal), never in the workspace or the store, so an agent
// confined to its workspace can neither read a copy to search nor write
// one of its own.
const (
	// passphraseNotSet: the project has no passphrase record, so nothing
	// only a person may do can be done here yet.
	passphraseNotSet errs.Code = "passphrase-not-set"
	// personNotProven: the passphrase typed was not the project's.
	personNotProven errs.Code = "person-not-proven"
	// passphraseRecordUnsafe: the record is a link, not the person's, or
	// writable by others, or unreadable: it decides nothing.
	passphraseRecordUnsafe errs.Code = "passphrase-record-unsafe"
)

// passphraseFile is the record's name in the person's project folder.
const passphraseFile = "approver-passphrase.json"

// wrongPassphraseDelay is added to every wrong answer, on top of the
// hash's own cost, so that guessing at a terminal is slow.
const wrongPassphraseDelay = time.Second

// personPrefix marks a name proven by the passphrase on the records
// (answered_by, a confirmation's confirmed_by).
const personPrefix = "person:"

// projectRoot is the root of the project this run acts on, its links
// resolved: the key of the person's folder for it.
func (a *app) projectRoot() (string, error) {
	p, err := a.locateProject()
	if err != nil {
		return "", err
	}
	return resolvedRoot(p.Root), nil
}

func resolvedRoot(root string) string {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	return root
}

// passphrasePath is the record's path for the project at root.
func (a *app) passphrasePath(root string) (string, error) {
	dirs, err := a.personalDirs()
	if err != nil {
		return "", errs.E(passphraseRecordUnsafe, "cannot find your home folder in the user database").Wrap(err)
	}
	return filepath.Join(dirs.ProjectDir(root), passphraseFile), nil
}

// loadPassphrase reads the project's record, refusing one that is not
// the person's own.
func (a *app) loadPassphrase(root string) (passphrase.Record, string, error) {
	path, err := a.passphrasePath(root)
	if err != nil {
		return passphrase.Record{}, "", err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return passphrase.Record{}, path, errs.E(passphraseNotSet, "this project has no approver passphrase, so answering, confirming and minting or revoking tokens are refused here; nothing was sent",
			errs.Step{Command: "dont passphrase set", Description: "set it, at your own terminal (it is kept outside the workspace, in " + filepath.Dir(path) + ")"}).
			Unmet("an approver passphrase")
	}
	unsafe := func(err error) error {
		return errs.E(passphraseRecordUnsafe, "the approver passphrase record "+path+" is not used: "+err.Error()+"; nothing was sent",
			errs.Step{Command: "rm " + path + " && dont passphrase set", Description: "if you did not make it so, replace it (and find out who could write it)"}).Wrap(err)
	}
	for _, p := range []string{filepath.Dir(path), path} {
		if err := personal.CheckOwned(p); err != nil {
			return passphrase.Record{}, path, unsafe(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return passphrase.Record{}, path, unsafe(err)
	}
	rec, err := passphrase.Parse(raw)
	if err != nil {
		return passphrase.Record{}, path, unsafe(err)
	}
	return rec, path, nil
}

// savePassphrase writes the record atomically, private to the person.
func savePassphrase(path string, rec passphrase.Record) error {
	raw, err := rec.Marshal()
	if err != nil {
		return errs.E(errs.Internal, "cannot encode the passphrase record").Wrap(err)
	}
	if err := personal.WriteFile(path, raw); err != nil {
		return errs.E(errs.StoreError, "cannot write "+path+": "+err.Error()).Wrap(err)
	}
	return nil
}

// provePerson reads the approver passphrase from the controlling
// terminal tty (no echo) and checks it against the project's record. It
// returns the name the records keep (person:<name>), from the record,
// never from a variable. A wrong passphrase is refused after a delay.
func (a *app) provePerson(ctx context.Context, tty *os.File) (string, error) {
	root, err := a.projectRoot()
	if err != nil {
		return "", err
	}
	rec, path, err := a.loadPassphrase(root)
	if err != nil {
		return "", err
	}
	// The project it acts on, whole: a .dont/ planted below the person's
	// project would otherwise take the answer (docs/security.md, "The
	// project dont opens").
	for _, l := range render.Wrap("acting on the project at ", "    ", visible.Line(root), a.promptWidth(tty)) {
		fmt.Fprintln(tty, l)
	}
	fmt.Fprintf(tty, "approver passphrase for %s: ", visible.Line(rec.Name))
	secret, err := readSecret(ctx, tty)
	if err != nil {
		return "", err
	}
	if !rec.Verify(secret) {
		select {
		case <-time.After(wrongPassphraseDelay):
		case <-ctx.Done():
		}
		return "", errs.E(personNotProven, "that is not this project's approver passphrase; nothing was sent",
			errs.Step{Command: "dont approvals watch --session <session>", Description: "the person answers at their own terminal, with the passphrase set by dont passphrase set"},
			errs.Step{Command: "rm " + path + " && dont passphrase set", Description: "a person who forgot it removes the record and sets a new one, at their own terminal"})
	}
	return personPrefix + rec.Name, nil
}

// proveAnswer is the passphrase after a person's yes at the controlling
// terminal: a no needs none; a yes counts only with it, and then the
// call runs as the person the record names.
func (a *app) proveAnswer(ctx context.Context, tty *os.File, yes bool) (bool, error) {
	if !yes {
		return false, nil
	}
	name, err := a.provePerson(ctx, tty)
	if err != nil {
		return false, err
	}
	a.person = name
	return true, nil
}

// provePersonFor proves the person for a person-only call (tools
// NeedsPerson) whose own confirmation has already been given: the
// passphrase at the controlling terminal, never under a harness signal.
func (a *app) provePersonFor(ctx context.Context, t *tools.Tool) error {
	path := "dont " + strings.ReplaceAll(t.Name, ".", " ")
	tty, err := a.personTerminal(path)
	if err != nil {
		e := errs.As(err)
		e.Remediation = []errs.Step{{Command: path + " …  # at your own terminal", Description: "only the person mints or revokes tokens here: it asks for the approver passphrase; an agent holds a harness token to dont serve"}}
		return e
	}
	defer tty.Close()
	_, err = a.proveAnswer(ctx, tty, true)
	return err
}

// readSecret reads one line from the terminal with its echo off. An end
// of input before the line's end, or an interrupt, reads nothing.
func readSecret(ctx context.Context, tty *os.File) ([]byte, error) {
	restore, err := echoOff(int(tty.Fd()))
	if err != nil {
		return nil, errs.E(confirm.PersonRequired, "the passphrase is typed at the controlling terminal, and its echo cannot be turned off; nothing was sent").
			Unmet("a terminal").Wrap(err)
	}
	line, err := confirmclient.ReadLine(ctx, tty)
	restore()
	fmt.Fprintln(tty)
	if err != nil {
		return nil, errs.E(errs.Interrupted, "the passphrase was not read to its end; nothing was sent").Wrap(err)
	}
	return []byte(line), nil
}

// setPassphrase asks for the person's name and a new passphrase (twice)
// at the controlling terminal and writes the record for the project at
// root. Changing one needs the old passphrase first.
func (a *app) setPassphrase(ctx context.Context, tty *os.File, root string) (string, string, error) {
	old, path, err := a.loadPassphrase(root)
	switch {
	case err == nil:
		fmt.Fprintf(tty, "current approver passphrase for %s: ", visible.Line(old.Name))
		secret, err := readSecret(ctx, tty)
		if err != nil {
			return "", "", err
		}
		if !old.Verify(secret) {
			time.Sleep(wrongPassphraseDelay)
			return "", "", errs.E(personNotProven, "that is not the current approver passphrase; nothing was changed",
				errs.Step{Command: "rm " + path + " && dont passphrase set", Description: "a person who forgot it removes the record and sets a new one"})
		}
	case errs.Is(err, passphraseNotSet):
	default:
		return "", "", err
	}
	name := old.Name
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	fmt.Fprintf(tty, "your name, as your answers will record it [%s]: ", visible.Line(name))
	line, err := confirmclient.ReadLine(ctx, tty)
	if err != nil {
		return "", "", errs.E(errs.Interrupted, "the name was not read; nothing was changed").Wrap(err)
	}
	if line = strings.TrimSpace(strings.TrimSuffix(line, "\r")); line != "" {
		name = line
	}
	fmt.Fprint(tty, "new approver passphrase: ")
	first, err := readSecret(ctx, tty)
	if err != nil {
		return "", "", err
	}
	fmt.Fprint(tty, "the same again: ")
	second, err := readSecret(ctx, tty)
	if err != nil {
		return "", "", err
	}
	if string(first) != string(second) {
		return "", "", errs.E(errs.InvalidArgument, "the two passphrases differ; nothing was changed",
			errs.Step{Command: "dont passphrase set", Description: "type the same passphrase twice"})
	}
	rec, err := passphrase.NewWith(name, first, a.passphraseParams())
	if err != nil {
		return "", "", errs.E(errs.InvalidArgument, err.Error()+"; nothing was changed",
			errs.Step{Command: "dont passphrase set", Description: "choose a name and a passphrase of at least " + fmt.Sprint(passphrase.MinLength) + " characters"})
	}
	if err := savePassphrase(path, rec); err != nil {
		return "", "", err
	}
	return rec.Name, path, nil
}

// passphraseCommand is `dont passphrase set`.
func (a *app) passphraseCommand() *cobra.Command {
	group := &cobra.Command{Use: "passphrase", Short: "The approver passphrase: what proves a person at this project's embedded CLI.",
		Args: a.argCount(0), RunE: func(c *cobra.Command, _ []string) error { return c.Help() }}
	group.AddCommand(&cobra.Command{
		Use:   "set",
		Short: "Set (or, with the current one, change) the approver passphrase, at your own terminal; kept outside the workspace.",
		Args:  a.argCount(0),
		RunE: func(c *cobra.Command, _ []string) error {
			root, err := a.projectRoot()
			if err != nil {
				return err
			}
			tty, err := a.personTerminal("setting the approver passphrase")
			if err != nil {
				return err
			}
			defer tty.Close()
			name, path, err := a.setPassphrase(c.Context(), tty, root)
			if err != nil {
				return err
			}
			a.emit(tools.Output{Kind: envelope.KindPassphrase, Data: map[string]string{"name": name, "record": path, "root": root},
				Hints: []string{"dont approvals watch --session ses:…  # answers now ask for it"}})
			return nil
		},
	})
	return group
}
