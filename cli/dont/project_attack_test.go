package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runAt runs the binary with the project's environment in another folder.
func (p *testProject) runAt(t *testing.T, dir string, args ...string) result {
	t.Helper()
	c := p.cmd(args...)
	c.Dir = dir
	return p.runCmd(t, c, nil, nil)
}

// The attack: an agent plants .dont/ in a subfolder of the person's
// project; every command run below it uses the agent's store. dont cannot
// tell whose it is (same user, same modes), so it says which project it
// uses and which one it passed over.
func TestAProjectPlantedInASubfolderIsNamedWhenItShadowsTheProject(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	sub := filepath.Join(p.dir, "src", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := p.runAt(t, sub, "init"); r.exit != 0 {
		t.Fatalf("init in a subfolder: %s", r.stdout)
	}
	r := p.runAt(t, filepath.Join(sub), "list")
	if r.exit != 0 || fmt.Sprint(warnings(r)) != "[project-nested]" {
		t.Fatalf("list below a planted project: exit %d %s", r.exit, r.stdout)
	}
	msg := r.env["warnings"].([]any)[0].(map[string]any)["message"].(string)
	for _, want := range []string{"using the project at " + sub, p.dir + " above it", "DONT_PROJECT_DIR=" + p.dir} {
		if !strings.Contains(msg, want) {
			t.Fatalf("the warning %q does not say %q", msg, want)
		}
	}
	// A failing call says it too.
	if r := p.runAt(t, sub, "show", "claim:01J0000000000000000000000Z"); r.exit == 0 || fmt.Sprint(warnings(r)) != "[project-nested]" {
		t.Fatalf("a failing call below a planted project: exit %d %s", r.exit, r.stdout)
	}
	// At the project root nothing is nested.
	if r := p.ok("list"); len(warnings(r)) != 0 {
		t.Fatalf("list at the root: %s", r.stdout)
	}
}

// The attack: an agent replaces its workspace's .dont/ with a link to
// another store (the person's elsewhere, or one it prepared), so that the
// person's commands run there act on a store they did not mean.
func TestALinkedProjectFolderIsNotFollowed(t *testing.T) {
	t.Parallel()
	owner := newProject(t)
	id := owner.ok("conclude", "the owner's claim").str("id")
	workspace := t.TempDir()
	if err := os.Symlink(filepath.Join(owner.dir, ".dont"), filepath.Join(workspace, ".dont")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"list"}, {"conclude", "written through the link"}, {"lock", id, "--yes"}} {
		r := owner.runAt(t, workspace, args...)
		if r.exit != 3 || r.str("code") != "project-not-own" || len(r.data()["remediation"].([]any)) == 0 {
			t.Fatalf("dont %v through a linked .dont/: exit %d %s", args, r.exit, r.stdout)
		}
	}
	if r := owner.ok("list"); r.data()["count"] != 1.0 || owner.ok("show", id).str("status") != "unverified" {
		t.Fatalf("the store behind the link changed: %s", r.stdout)
	}
}

// The attack: a .dont/ that the group or others may write (a shared
// checkout, a careless chmod) may hold a store someone else put there.
// Every command refuses it and says how to make it private.
func TestAProjectFolderOthersMayWriteIsNotOpened(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	dir := filepath.Join(p.dir, ".dont")
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	r := p.run("conclude", "written into a shared folder")
	if r.exit != 3 || r.str("code") != "project-not-own" || !strings.Contains(fmt.Sprint(r.data()["remediation"]), "chmod 700 .dont") {
		t.Fatalf("conclude in a 0777 .dont/: exit %d %s", r.exit, r.stdout)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := p.ok("list"); r.data()["count"] != 0.0 {
		t.Fatalf("the refused conclude wrote: %s", r.stdout)
	}
	// Another user's folder: only root can make one here.
	if os.Getuid() != 0 {
		t.Skip("not root: the owner check is covered by internal/project's test of personal.OwnerUID only")
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	r = p.run("list")
	if err := os.Chown(dir, 0, 0); err != nil {
		t.Fatal(err)
	}
	if r.exit != 3 || r.str("code") != "project-not-own" || !strings.Contains(r.str("message"), "belongs to uid 65534") {
		t.Fatalf("list in another user's .dont/: exit %d %s", r.exit, r.stdout)
	}
}
