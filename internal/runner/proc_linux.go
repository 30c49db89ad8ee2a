//go:build linux

package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// adopt makes the runner a child subreaper (PR_SET_CHILD_SUBREAPER): a
// process an agent detaches — with setsid, a double fork, or by exiting
// before its children — is reparented to the runner, not to init, so the
// runner can still find it and kill it.
func adopt() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// sweep kills every descendant of the runner outside the subtrees of the
// agents still running (keep), and reaps those that are its children. It
// passes over /proc until none is left: a process stopped and then killed
// in one pass may leave children that the next pass finds reparented to
// the runner. A pass stops them all first, so nothing forks past it.
func sweep(keep map[int]bool) {
	self := os.Getpid()
	for pass := 0; pass < 200; pass++ {
		victims := descendants(self, keep)
		if len(victims) == 0 {
			return
		}
		handles := make([]handle, 0, len(victims))
		for _, v := range victims {
			if h, ok := hold(v); ok {
				handles = append(handles, h)
			}
		}
		for _, h := range handles {
			h.signal(unix.SIGSTOP)
		}
		for _, h := range handles {
			h.signal(unix.SIGKILL)
			h.close()
		}
		reaped := false
		for _, v := range victims {
			if v.ppid != self {
				continue // reparented to the runner once its parent is gone
			}
			// A child of the runner: its pid cannot be reused before this
			// wait, and SIGKILL ends it, so the wait is short.
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(v.pid, &ws, 0, nil); err == nil || errors.Is(err, syscall.ECHILD) {
				reaped = true
			}
		}
		if !reaped {
			time.Sleep(5 * time.Millisecond) // give the kills time to land
		}
	}
}

// handle is a process to signal: a pidfd where the kernel has them, so
// that a pid reused by an unrelated process between the /proc walk and
// the signal is never signalled.
type handle struct {
	pid, fd int
}

// hold pins v: it opens a pidfd, then checks that the process behind it
// still has the parent the walk saw (a reused pid would not).
func hold(v proc) (handle, bool) {
	fd, err := unix.PidfdOpen(v.pid, 0)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return handle{pid: v.pid, fd: -1}, true // an old kernel: the pid alone
		}
		return handle{}, false // gone already
	}
	if ppid, ok := parentOf(v.pid); !ok || ppid != v.ppid {
		unix.Close(fd)
		return handle{}, false
	}
	return handle{pid: v.pid, fd: fd}, true
}

func (h handle) signal(sig unix.Signal) {
	if h.fd < 0 {
		_ = unix.Kill(h.pid, sig)
		return
	}
	_ = unix.PidfdSendSignal(h.fd, sig, nil, 0)
}

func (h handle) close() {
	if h.fd >= 0 {
		unix.Close(h.fd)
	}
}

type proc struct{ pid, ppid int }

// descendants lists the processes whose parent chain leads to root,
// outside the subtrees rooted at keep.
func descendants(root int, keep map[int]bool) []proc {
	children := map[int][]int{}
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, ok := parentOf(pid)
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		parent[pid] = ppid
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if keep[c] {
				continue
			}
			out = append(out, proc{pid: c, ppid: parent[c]})
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads a process's parent from /proc/<pid>/stat (the fourth
// field; the second, the command name, may hold spaces and parentheses).
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
