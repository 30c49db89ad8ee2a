package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

func TestDoctorPassesAHealthyProjectAndStrictFailsACorruptOne(t *testing.T) {
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
	if err := st.Commit(context.Background(), service.Tx{Entities: []service.EntityPut{{Entity: e2, PrevVersion: e.Version}}}); err != nil {
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
