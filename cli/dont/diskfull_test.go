package main

import "testing"

// On a nearly full disk (the store's disk reports less free space than
// the reserve) a write is refused with a clear error and changes nothing;
// reads and dont doctor still work; with space back, writes resume.
func TestANearlyFullDiskRefusesWritesAndKeepsReadsAndDoctor(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "written while the disk had room").str("id")
	full := []string{"DONT_FAULT_FREE_BYTES=1048576"}
	r := p.runEnv(full, "conclude", "written on a nearly full disk")
	if r.exit != 3 || r.str("code") != "disk-nearly-full" || len(r.remediation()) == 0 {
		t.Fatalf("conclude on a nearly full disk: exit %d %s", r.exit, r.stdout)
	}
	if r := p.runEnv(full, "show", id); r.exit != 0 || r.str("id") != id {
		t.Fatalf("show on a nearly full disk: exit %d %s", r.exit, r.stdout)
	}
	if r := p.runEnv(full, "doctor", "--strict"); r.exit != 0 {
		t.Fatalf("doctor on a nearly full disk: exit %d %s", r.exit, r.stdout)
	}
	if n := len(p.ok("list").data()["entities"].([]any)); n != 1 {
		t.Fatalf("%d claims after the refused write, want 1", n)
	}
	p.ok("conclude", "written once space returned")
}

func (r result) remediation() []any { rem, _ := r.data()["remediation"].([]any); return rem }
