package main

import (
	"fmt"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/invariants"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/spf13/cobra"
)

// InvariantViolation is doctor --strict's refusal: the store breaks a rule
// the protocol promises.
const InvariantViolation errs.Code = "invariant-violation"

// StoreNotPrivate is doctor's warning, and doctor --strict's refusal, when
// .dont/ or a database file lets the group or others in: the store holds
// token hashes, the project secret and remembered responses.
const StoreNotPrivate errs.Code = "store-not-private"

// StoreDamaged is doctor's warning, and doctor --strict's refusal, when
// SQLite's own check finds damaged pages or indexes in dont.db.
const StoreDamaged errs.Code = "store-damaged"

// privacy reads the modes of .dont/ and the database files: what lets the
// group or others in, and doctor's warning about each.
func privacy(p project.Project) ([]project.Exposure, []envelope.Warning, error) {
	exposed, err := p.Exposed()
	if err != nil {
		return nil, nil, errs.E(errs.StoreError, "doctor could not read the modes of "+p.StateDir()+": "+err.Error()).Wrap(err)
	}
	var out []envelope.Warning
	for _, x := range exposed {
		out = append(out, envelope.Warning{Code: envelope.CodeOf(StoreNotPrivate), Message: fmt.Sprintf(
			"%s has mode %04o: the group or others may read it, want %04o (next: cd %s && %s)", x.Path, x.Mode, x.Want, p.Root, project.MakePrivate)})
	}
	return exposed, out, nil
}

// doctorReport is doctor's data: the invariants' report and, when a
// retention is set (frame_retention, delivery_retention), what it removed.
type doctorReport struct {
	invariants.Report
	Retention *sqlite.Pruned `json:"retention,omitempty"`
}

// doctorCommand checks the embedded store's invariants after a sweep.
func (a *app) doctorCommand() *cobra.Command {
	var strict, noSweep, full bool
	c := &cobra.Command{
		Use: "doctor",
		Short: "Check the store: SQLite's integrity check of dont.db (a damaged file exits 3, store-damaged), one terminal event per spawn or approval, status = fold of events, nothing pending past its deadline " +
			"(sweeps first, after applying frame_retention and delivery_retention if set), and that only the owner may read .dont/ and dont.db; warns about config settings it ignores. --strict exits non-zero on any violation.",
		Args: a.argCount(0),
		RunE: func(c *cobra.Command, _ []string) error {
			if a.endpoint != "" || a.getenv("DONT_ENDPOINT") != "" { // a stored login does not name this project's store
				return errs.E(errs.Usage, "doctor reads the store directly; run it where the store is",
					errs.Step{Command: "DONT_ENDPOINT= dont doctor --strict", Description: "run it on the machine that holds .dont/"})
			}
			p, store, err := a.openProjectStore()
			if err != nil {
				return err
			}
			defer store.Close()
			// SQLite's own check first: a damaged file's sweep and
			// invariants are not to be trusted, nor written to.
			problems, err := store.Check(c.Context(), full)
			if err != nil {
				return errs.E(errs.StoreError, "doctor could not check the database file: "+err.Error()).Wrap(err)
			}
			if len(problems) > 0 {
				e := errs.E(StoreDamaged, fmt.Sprintf("%s is damaged: %d problem(s); first: %s", p.DBPath(), len(problems), problems[0]),
					errs.Step{Command: "dont restore <backup file>", Description: "bring back the last sound backup (docs/design.md, \"Storage health\")"},
					errs.Step{Command: "dont backup <file>", Description: "first save what can be read of it, if you have no backup"})
				for _, pr := range problems {
					e.Unmet(pr)
				}
				a.failWith(e, nil)
				return nil
			}
			// What of the config files was ignored (an untrusted workspace
			// config, a person's config others may write) becomes a warning.
			var configWarnings []envelope.Warning
			if _, err := a.projectSettings(p); err != nil {
				configWarnings = append(configWarnings, envelope.Warning{Code: envelope.CodeOf(errs.ConfigInvalid), Message: err.Error()})
			}
			svc := service.New(service.Deps{ToolNames: tools.Names(), Store: store, Confirmations: store, Author: a.author(), Clock: a.clock()})
			if svc.Approvals, err = a.approvalsConfig(store, false); err != nil {
				return err
			}
			keep, err := a.retention(p)
			if err != nil {
				return err
			}
			var rep invariants.Report
			var pruned *sqlite.Pruned
			if noSweep {
				d, err := invariants.Read(c.Context(), store)
				if err != nil {
					return errs.E(errs.StoreError, "doctor could not read the store: "+err.Error()).Wrap(err)
				}
				rep = invariants.Check(d, time.Now().UTC())
			} else {
				// The retention first, so that the check reads what is kept.
				if keep != (sqlite.Retention{}) {
					now := time.Now()
					if clock := a.clock(); clock != nil {
						now = clock()
					}
					got, err := store.Prune(c.Context(), now.UTC(), keep)
					if err != nil {
						return errs.E(errs.StoreError, "doctor could not apply the retention: "+err.Error()).Wrap(err)
					}
					pruned = &got
				}
				if rep, err = invariants.Verify(c.Context(), svc); err != nil {
					return errs.E(errs.StoreError, "doctor could not sweep and read the store: "+err.Error()).Wrap(err)
				}
			}
			var warnings []envelope.Warning
			for _, v := range rep.Violations {
				warnings = append(warnings, envelope.Warning{Code: envelope.WarningCode(v.Rule), Message: v.ID + ": " + v.Message + " (next: " + v.Remediate + ")"})
			}
			exposed, private, err := privacy(p)
			if err != nil {
				return err
			}
			warnings = append(append(warnings, private...), configWarnings...)
			if strict && !rep.OK() {
				first := rep.Violations[0]
				e := errs.E(InvariantViolation, fmt.Sprintf("%d invariant violation(s); first: %s on %s: %s", len(rep.Violations), first.Rule, first.ID, first.Message),
					errs.Step{Command: "dont doctor", Description: "list every violation"},
					errs.Step{Command: rep.Violations[0].Remediate, Description: "inspect the first one (" + rep.Violations[0].ID + ")"})
				for _, v := range rep.Violations {
					e.Unmet(v.Rule + ": " + v.ID)
				}
				a.failWith(e, warnings)
				return nil
			}
			if strict && len(exposed) > 0 {
				e := errs.E(StoreNotPrivate, fmt.Sprintf("%d file(s) of the store may be read by the group or others; first: %s (mode %04o)",
					len(exposed), exposed[0].Path, exposed[0].Mode),
					errs.Step{Command: "cd " + p.Root + " && " + project.MakePrivate, Description: "only the owner may read the store"})
				for _, x := range exposed {
					e.Unmet(fmt.Sprintf("%s mode %04o, at most %04o", x.Path, x.Mode, x.Want))
				}
				a.failWith(e, warnings)
				return nil
			}
			a.emit(tools.Output{Kind: envelope.KindDoctor, Data: doctorReport{Report: rep, Retention: pruned}, Warnings: warnings})
			return nil
		},
	}
	c.Flags().BoolVar(&strict, "strict", false, "exit 3 with an error envelope if any invariant is broken or the store is readable by others")
	c.Flags().BoolVar(&full, "full", false, "run SQLite's full integrity_check (every index against its table) instead of quick_check")
	c.Flags().BoolVar(&noSweep, "no-sweep", false, "check without sweeping first (overdue pending spawns are then reported)")
	return c
}
