package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// damage overwrites 64 pages in the middle of the project's database.
func (p *testProject) damage(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(p.dir, ".dont", "dont.db"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	pages := info.Size() / 4096
	if pages < 80 {
		t.Fatalf("the store has %d pages; the test needs more to damage", pages)
	}
	garbage := []byte(strings.Repeat("\x5a\xa5", 2048))
	for pg := pages/2 - 32; pg < pages/2+32; pg++ {
		if _, err := f.WriteAt(garbage, pg*4096); err != nil {
			t.Fatal(err)
		}
	}
}

// Storage health: doctor finds a damaged file and says how to restore; a
// backup taken before the damage brings the claims back, at the person's
// terminal with the approver passphrase.
func TestDoctorFindsADamagedStoreAndABackupBringsItBack(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.setPassphrase()
	long := strings.Repeat("a long statement to fill the pages of the store ", 120)
	var statements []string
	for i := range 60 {
		statements = append(statements, long+string(rune('a'+i%26)))
	}
	first := p.seedClaims(statements...)[0]
	if r := p.ok("doctor", "--full"); r.exit != 0 {
		t.Fatalf("doctor on a sound store: %s", r.stdout)
	}
	backup := filepath.Join(t.TempDir(), "dont-backup.db")
	if r := p.ok("backup", backup); r.str("file") != backup {
		t.Fatalf("backup: %s", r.stdout)
	}
	if info, err := os.Stat(backup); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the backup file: %v %v; want mode 0600", info, err)
	}
	if r := p.run("backup", backup); r.exit != 2 || r.str("code") != "backup-exists" || len(r.remediation()) == 0 {
		t.Fatalf("a backup over an existing file: exit %d %s", r.exit, r.stdout)
	}
	p.damage(t)
	r := p.run("doctor")
	if r.exit != 3 || r.str("code") != "store-damaged" || !strings.Contains(r.stdout, "dont restore") {
		t.Fatalf("doctor on a damaged store: exit %d %s", r.exit, r.stdout)
	}

	// The person restores at their terminal: a yes, then the passphrase.
	c := p.cmd("restore", backup)
	typedAtTerminal(t, c, "y\n"+testPassphrase+"\n")
	if r := p.runCmd(t, c, nil, nil); r.exit != 0 || r.str("file") != backup {
		t.Fatalf("restore: exit %d %s %s", r.exit, r.stdout, r.stderr)
	}
	if r := p.ok("doctor", "--full"); r.exit != 0 {
		t.Fatalf("doctor after the restore: %s", r.stdout)
	}
	if r := p.ok("show", first); r.str("id") != first {
		t.Fatalf("the first claim after the restore: %s", r.stdout)
	}
}

// An agent cannot roll the store back to a backup (say, to one taken
// before the person refused its question): a restore is the person's, at
// the terminal with the passphrase; a harness signal or no terminal
// refuses it and nothing changes.
func TestAnAgentCannotRestoreAnOlderBackup(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.setPassphrase()
	backup := filepath.Join(t.TempDir(), "old.db")
	p.ok("backup", backup)
	later := p.ok("conclude", "written after the backup").str("id")
	if r := p.run("restore", backup); r.exit != 2 || r.str("code") != "person-required" {
		t.Fatalf("restore with no terminal: exit %d %s", r.exit, r.stdout)
	}
	c := p.cmd("restore", backup)
	typedAtTerminal(t, c, "y\n"+testPassphrase+"\n")
	if r := p.runCmd(t, c, []string{"DONT_HARNESS=1"}, nil); r.exit != 2 || r.str("code") != "person-required" {
		t.Fatalf("restore under a harness signal: exit %d %s", r.exit, r.stdout)
	}
	c = p.cmd("restore", backup)
	typedAtTerminal(t, c, "y\nnot the passphrase\n")
	if r := p.runCmd(t, c, nil, nil); r.exit == 0 {
		t.Fatalf("restore with a wrong passphrase: exit %d %s", r.exit, r.stdout)
	}
	if r := p.ok("show", later); r.str("id") != later {
		t.Fatalf("a refused restore changed the store: %s", r.stdout)
	}
	notDB := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notDB, []byte("hello"), 0o600)
	c = p.cmd("restore", notDB)
	typedAtTerminal(t, c, "y\n"+testPassphrase+"\n")
	if r := p.runCmd(t, c, nil, nil); r.exit != 3 || r.str("code") != "backup-invalid" || len(r.remediation()) == 0 {
		t.Fatalf("restore from a file that is no store: exit %d %s", r.exit, r.stdout)
	}
	if r := p.ok("show", later); r.str("id") != later {
		t.Fatalf("a refused restore changed the store: %s", r.stdout)
	}
}
