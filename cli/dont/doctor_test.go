package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

func TestDoctorPassesAHealthyProjectAndStrictFailsACorruptOne(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	rid := p.runEnv([]string{"DONT_SPAWN_TIMEOUT=1ms"}, "assume", id).str("request_id")
	// Without a sweep the expired spawn is overdue; doctor sweeps first.
	if r := p.run("doctor", "--strict", "--no-sweep"); r.exit != 3 || r.str("code") != "invariant-violation" {
		t.Fatalf("doctor --no-sweep on an overdue spawn: exit %d %s", r.exit, r.stdout)
	}
	r := p.ok("doctor", "--strict")
	if r.data()["entities"] != 1.0 || r.data()["spawns"] != 1.0 || len(r.data()["violations"].([]any)) != 0 {
		t.Fatalf("doctor on a healthy project: %s", r.stdout)
	}
	if p.ok("show", id).str("pending_spawn") != "" {
		t.Fatalf("doctor's sweep did not resolve %s", rid)
	}

	// A status written without its event: the fold disagrees.
	p.corrupted = true
	st, err := sqlite.Open(filepath.Join(p.dir, ".dont", "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := st.GetEntity(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	e2 := e
	e2.Status, e2.Version = ledger.Verified, e.Version+1
	if err := st.Commit(context.Background(), store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: e.Version}}}); err != nil {
		t.Fatal(err)
	}
	r = p.run("doctor")
	if r.exit != 0 || len(r.data()["violations"].([]any)) != 1 || len(warnings(r)) != 1 || warnings(r)[0] != "status-is-fold" {
		t.Fatalf("doctor without --strict reports and exits 0: exit %d %s", r.exit, r.stdout)
	}
	r = p.run("doctor", "--strict")
	if r.exit != 3 || r.env["ok"] != false || r.str("code") != "invariant-violation" || r.str("entity_id") != "" {
		t.Fatalf("doctor --strict on a corrupt store: exit %d %s", r.exit, r.stdout)
	}
	if rem := r.data()["remediation"].([]any); len(rem) < 2 {
		t.Fatalf("remediation: %v", rem)
	}
}

// The attack: another account reads a store whose files were made wider
// than init makes them (a copy, a restore, a chmod): doctor says so with
// the command that fixes it, and --strict fails on it. A .dont/ folder
// that lets the group or others in is refused by every command
// (TestAProjectFolderOthersMayWriteIsNotOpened).
func TestDoctorWarnsAboutAWorldReadableStore(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("mode bits do not describe access on Windows")
	}
	p := newProject(t)
	p.ok("conclude", "water boils at 100 C at sea level")
	dir := filepath.Join(p.dir, ".dont")
	if err := os.Chmod(filepath.Join(dir, "dont.db"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The database (and the -wal and -shm that SQLite makes with the
	// database's mode while doctor has it open).
	r := p.run("doctor")
	if r.exit != 0 || r.env["ok"] != true || len(warnings(r)) < 1 {
		t.Fatalf("doctor on a readable store: exit %d %s", r.exit, r.stdout)
	}
	named := map[string]bool{}
	for _, w := range r.env["warnings"].([]any) {
		w := w.(map[string]any)
		msg := w["message"].(string)
		if w["code"] != "store-not-private" || !strings.Contains(msg, "chmod 700 .dont && chmod 600 .dont/dont.db*") {
			t.Fatalf("the warning does not say how to fix it: %v", w)
		}
		path, _, _ := strings.Cut(msg, " has mode ")
		named[path] = true
	}
	if !named[filepath.Join(dir, "dont.db")] {
		t.Fatalf("doctor names %v", named)
	}
	r = p.run("doctor", "--strict")
	if r.exit != 3 || r.env["ok"] != false || r.str("code") != "store-not-private" ||
		!strings.Contains(fmt.Sprint(r.data()["remediation"]), "chmod 700 .dont && chmod 600 .dont/dont.db*") {
		t.Fatalf("doctor --strict on a readable store: exit %d %s", r.exit, r.stdout)
	}
	// The remediation, run as told: doctor is content (and so is the
	// closing doctor --strict of every test).
	fix := exec.Command("sh", "-c", "chmod 700 .dont && chmod 600 .dont/dont.db*")
	fix.Dir = p.dir
	if out, err := fix.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if r := p.ok("doctor", "--strict"); len(warnings(r)) != 0 {
		t.Fatalf("doctor after the remediation: %s", r.stdout)
	}
}
