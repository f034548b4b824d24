//go:build !unix

package tool

import (
	"os"
	"os/exec"
	"time"
)

// newGroup does nothing where process groups do not exist.
func newGroup(*exec.Cmd) {}

// signalGroup kills the process itself where process groups do not exist.
func signalGroup(pid int, hard bool) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	return p.Kill()
}

// waitGroupGone has no group to wait for where process groups do not exist.
func waitGroupGone(int, time.Duration) {}
