//go:build !unix

package runner

import "os/exec"

// Without process groups, the agent alone is killed.
func ownGroup(*exec.Cmd) {}

func terminate(cmd *exec.Cmd) { killGroup(cmd) }

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
