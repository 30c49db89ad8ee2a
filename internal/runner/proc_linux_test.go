//go:build linux

package runner

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func gone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }

// With several agents at once, the sweep at one agent's end kills what
// any agent detached (it is the runner's now) but never a running
// agent's own tree.
func TestASweepKillsADetachedProcessButSparesARunningAgentsTree(t *testing.T) {
	if err := adopt(); err != nil {
		t.Fatal(err)
	}
	running := exec.Command("sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; wait")
	ownGroup(running)
	out, err := running.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(running); _ = running.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || child <= 1 {
		t.Fatalf("the running agent's child: %q %v", line, err)
	}
	// A double fork: the subshell exits at once, its child is orphaned
	// and reparented to this process, the subreaper.
	b, err := exec.Command("sh", "-c", "(setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!)").Output()
	detached, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || detached <= 1 {
		t.Fatalf("the detached process: %q %v", b, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(detached, syscall.SIGKILL) })
	if ppid, ok := parentOf(detached); !ok || ppid != syscall.Getpid() {
		t.Fatalf("the detached process %d has parent %d, not this subreaper %d", detached, ppid, syscall.Getpid())
	}
	sweep(map[int]bool{running.Process.Pid: true})
	if !gone(detached) {
		t.Fatalf("the detached process %d outlived the sweep", detached)
	}
	if gone(running.Process.Pid) || gone(child) {
		t.Fatalf("the sweep killed a running agent (%d) or its child (%d)", running.Process.Pid, child)
	}
}
