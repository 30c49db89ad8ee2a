package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dont-cli/dont/cli/dont/confirmclient"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	"github.com/spf13/cobra"
)

// BackupExists refuses a backup that would write over a file.
const BackupExists errs.Code = "backup-exists"

// BackupInvalid refuses a restore from a file that is not a sound dont
// store; nothing changed.
const BackupInvalid errs.Code = "backup-invalid"

// backupDone is what dont backup and dont restore report.
type backupDone struct {
	Store string `json:"store"`
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
}

// storeAndFile opens the project's store for a command that works on the
// store file itself (refused when an endpoint is set), with its file
// argument made absolute.
func (a *app) storeAndFile(what, arg string) (string, project.Project, *sqlite.Store, error) {
	if a.remote() != "" {
		return "", project.Project{}, nil, errs.E(errs.Usage, what+" works on the store file; run it where the store is",
			errs.Step{Command: "DONT_ENDPOINT= dont " + what, Description: "run it on the machine that holds .dont/"})
	}
	file, err := filepath.Abs(arg)
	if err != nil {
		return "", project.Project{}, nil, errs.E(errs.Usage, "cannot resolve "+quote(arg)+": "+err.Error())
	}
	p, store, err := a.openProjectStore()
	return file, p, store, err
}

// backupCommand writes a consistent copy of the store while others use it.
func (a *app) backupCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "backup <file>",
		Short: "Copy the whole store (.dont/dont.db) into a new file, consistent while others write; mode 0600, never over an existing file.",
		Args:  a.argCount(1),
		RunE: func(c *cobra.Command, args []string) error {
			dst, p, store, err := a.storeAndFile("backup", args[0])
			if err != nil {
				return err
			}
			defer store.Close()
			if err := store.Backup(c.Context(), dst); errors.Is(err, sqlite.ErrBackupExists) {
				return errs.E(BackupExists, dst+" already exists; a backup never writes over a file",
					errs.Step{Command: "dont backup " + dst + ".new", Description: "write it to a new file"}).Unmet("a file that does not exist yet")
			} else if err != nil {
				return errs.E(errs.StoreError, "the backup failed and was removed: "+err.Error(),
					errs.Step{Command: "dont doctor", Description: "check the store"}).Wrap(err)
			}
			info, _ := os.Stat(dst)
			a.emit(tools.Output{Kind: envelope.KindBackup, Data: backupDone{Store: p.DBPath(), File: dst, Bytes: sizeOf(info)}})
			return nil
		},
	}
}

func sizeOf(info os.FileInfo) int64 {
	if info == nil {
		return 0
	}
	return info.Size()
}

// restoreCommand replaces the store's content with a backup's. It is the
// person's act: at the controlling terminal, a yes and the approver
// passphrase (an agent could otherwise roll back a refusal).
func (a *app) restoreCommand() *cobra.Command {
	return &cobra.Command{
		Use: "restore <file>",
		Short: "Replace the whole store with a backup `dont backup` wrote (checked first). A person's act: asks at the terminal, then the approver passphrase. " +
			"Stop `dont serve` on this project first.",
		Args: a.argCount(1),
		RunE: func(c *cobra.Command, args []string) error {
			src, p, store, err := a.storeAndFile("restore", args[0])
			if err != nil {
				return err
			}
			defer store.Close()
			tty, err := a.personTerminal("restoring " + p.DBPath())
			if err != nil {
				return err
			}
			defer tty.Close()
			fmt.Fprintf(tty, "Replace everything in %s with %s? Whatever was written since that backup is lost. [y/N] ", visible.Line(p.DBPath()), visible.Line(src))
			answer, err := confirmclient.ReadLine(c.Context(), tty)
			fmt.Fprintln(tty)
			if err != nil && c.Context().Err() != nil {
				return errs.E(errs.Interrupted, "interrupted at the prompt; nothing was restored")
			}
			if ok, err := a.proveAnswer(c.Context(), tty, confirm.Yes(answer)); err != nil {
				return err
			} else if !ok {
				return errs.E(confirm.Declined, "you did not restore; the store is as it was",
					errs.Step{Command: "dont restore " + src, Description: "restore after reading the prompt"}).Unmet("a yes at the terminal")
			}
			err = store.Restore(c.Context(), src)
			var bad *sqlite.BackupProblem
			if errors.As(err, &bad) {
				return errs.E(BackupInvalid, bad.Reason+"; nothing was restored").Unmet("a sound file written by dont backup")
			} else if err != nil {
				return errs.E(errs.StoreError, "the restore failed: "+err.Error(),
					errs.Step{Command: "dont doctor --full", Description: "check the store"}).Wrap(err)
			}
			info, _ := os.Stat(src)
			a.emit(tools.Output{Kind: envelope.KindRestore, Data: backupDone{Store: p.DBPath(), File: src, Bytes: sizeOf(info)}})
			return nil
		},
	}
}
