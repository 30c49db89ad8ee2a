package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/invariants"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
	_ "modernc.org/sqlite" // the driver of TestTheInProcessApprovalAuditIsTheCommands
)

// requireInvariants is every test's closing check (newProject): what
// `dont doctor --strict` refuses, checked in this process on the
// project's dont.db with the same code: SQLite's quick_check, the
// invariants after sweeping what is due (invariants.Verify), and that only
// the owner may read the store (privacy). As a dont process it was about
// 370 processes of a -short run. The tests whose subject is doctor run the
// binary (doctor_test.go, retention_test.go, and
// TestTheClosingCheckRefusesWhatDoctorStrictRefuses beside them).
func (p *testProject) requireInvariants() {
	p.t.Helper()
	for _, problem := range p.closingProblems() {
		p.t.Error("closing check: " + problem)
	}
}

// closingProblems is what the closing check finds, one line a problem.
func (p *testProject) closingProblems() []string {
	t := p.t
	t.Helper()
	ctx := context.Background()
	var out []string
	proj, st := p.openStore("closing check")
	defer st.Close()
	problems, err := st.Check(ctx, false)
	if err != nil || len(problems) > 0 {
		return []string{fmt.Sprintf("%s is damaged: %v %v", proj.DBPath(), err, problems)}
	}
	rep, err := invariants.Verify(ctx, p.inProcessService(st))
	if err != nil {
		t.Fatalf("closing check: sweep and read the store: %v", err)
	}
	for _, v := range rep.Violations {
		out = append(out, fmt.Sprintf("invariant %s broken on %s: %s", v.Rule, v.ID, v.Message))
	}
	exposed, _, err := privacy(proj)
	if err != nil {
		t.Fatalf("closing check: %v", err)
	}
	for _, x := range exposed {
		out = append(out, fmt.Sprintf("%s has mode %04o, at most %04o", x.Path, x.Mode, x.Want))
	}
	return out
}

// inProcessService is the service a dont command would build over st in
// p's environment: the sweep's clock and author are the ones doctor would
// have had there (faulthooks.go's clock, app.author).
func (p *testProject) inProcessService(st *sqlite.Store) *service.Service {
	svc := service.New(p.inProcessDeps(st))
	svc.Approvals = service.Approvals{Store: st}
	return svc
}

// inProcessDeps are the service's dependencies a doctor in p's
// environment would have over st.
func (p *testProject) inProcessDeps(st *sqlite.Store) service.Deps {
	var clock func() time.Time
	if offset, err := time.ParseDuration(p.envValue("DONT_FAULT_CLOCK_OFFSET")); err == nil && offset != 0 {
		clock = func() time.Time { return time.Now().Add(offset) }
	}
	author := p.envValue("DONT_AUTHOR")
	if author == "" {
		author = cmp.Or(os.Getenv("USER"), "cli")
	}
	return service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Author: author, Clock: clock}
}

// approvalAudit is `dont approvals audit` in this process: the same
// service call (Escalations.Audit) over p's store, before the closing
// check sweeps it. TestTheInProcessApprovalAuditIsTheCommands runs the
// command beside it.
func (p *testProject) approvalAudit() (approvals.AuditReport, error) {
	p.t.Helper()
	_, st := p.openStore("approvals audit")
	defer st.Close()
	return p.inProcessService(st).Escalations.Audit(context.Background())
}

// openStore opens p's project store in this process, as a dont command
// in p's environment finds it; step names the step in a failure.
func (p *testProject) openStore(step string) (project.Project, *sqlite.Store) {
	p.t.Helper()
	proj, err := project.Find(p.dir, p.envValue("DONT_PROJECT_DIR"))
	if err != nil {
		p.t.Fatalf("%s: %v", step, err)
	}
	st, err := sqlite.Open(proj.DBPath())
	if err != nil {
		p.t.Fatalf("%s: open %s: %v", step, proj.DBPath(), err)
	}
	return proj, st
}

// envValue is the last value p's own environment gives name ("" if none).
func (p *testProject) envValue(name string) string {
	v := ""
	for _, kv := range p.env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// The closing check stands in for doctor --strict in every test whose
// subject is something else; it must refuse what doctor --strict refuses
// and pass what it passes, through the same sweep.
func TestTheInProcessClosingCheckRefusesWhatDoctorStrictRefuses(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	// An expired spawn: both sweep it first and then find nothing.
	p.runEnv([]string{"DONT_SPAWN_TIMEOUT=1ms"}, "assume", id)
	if got := p.closingProblems(); len(got) != 0 {
		t.Fatalf("the closing check on a healthy project with a due spawn: %v", got)
	}
	p.ok("doctor", "--strict")

	// A status written without its event: the fold disagrees.
	p.corrupted = true
	st, err := sqlite.Open(filepath.Join(p.dir, ".dont", "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	e, err := st.GetEntity(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	e2 := e
	e2.Status, e2.Version = ledger.Verified, e.Version+1
	if err := st.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: e.Version}}}); err != nil {
		t.Fatal(err)
	}
	if r := p.run("doctor", "--strict"); r.exit != 3 || r.str("code") != "invariant-violation" {
		t.Fatalf("doctor --strict on a corrupt store: exit %d %s", r.exit, r.stdout)
	}
	if got := p.closingProblems(); len(got) != 1 || !strings.Contains(got[0], "status-is-fold") {
		t.Fatalf("the closing check on a corrupt store: %v, want the status-is-fold violation", got)
	}

	// A store others may read.
	fresh := newProject(t)
	db := filepath.Join(fresh.dir, ".dont", "dont.db")
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh.corrupted = true
	if r := fresh.run("doctor", "--strict"); r.exit != 3 || r.str("code") != "store-not-private" {
		t.Fatalf("doctor --strict on a readable store: exit %d %s", r.exit, r.stdout)
	}
	if got := fresh.closingProblems(); len(got) == 0 || !strings.Contains(got[0], db) {
		t.Fatalf("the closing check on a readable store: %v, want %s named", got, db)
	}
}

// Approval tests audit their final state in this process (approvalAudit);
// it must agree with `dont approvals audit` on a clean log and on a broken
// one.
func TestTheInProcessApprovalAuditIsTheCommands(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.frames("--session", ses)
	p.ok("escalate", "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "r", "--no-wait")
	rep, err := p.approvalAudit()
	if err != nil || rep.Requests != 1 || rep.Frames != 1 {
		t.Fatalf("the in-process audit of one question: %v %+v, want 1 request and 1 frame", err, rep)
	}
	r := p.ok("approvals", "audit")
	if got := r.data(); got["requests"] != float64(rep.Requests) || got["frames"] != float64(rep.Frames) || got["sessions"] != float64(rep.Sessions) {
		t.Fatalf("dont approvals audit read %v, the in-process audit %+v", got, rep)
	}

	// A question whose frame is gone: both refuse.
	p.corrupted = true
	db, err := sql.Open("sqlite", filepath.Join(p.dir, ".dont", "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DELETE FROM approval_frames"); err != nil {
		t.Fatal(err)
	}
	if r := p.run("approvals", "audit"); r.exit != 3 || r.str("code") != "frame-log-inconsistent" {
		t.Fatalf("dont approvals audit of a lost frame: exit %d %s", r.exit, r.stdout)
	}
	if rep, err := p.approvalAudit(); !errs.Is(err, service.FrameLogInconsistent) || rep.OK() {
		t.Fatalf("the in-process audit of a lost frame: %v %+v, want frame-log-inconsistent", err, rep)
	}
}
