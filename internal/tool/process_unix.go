//go:build unix

package tool

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// newGroup makes cmd the leader of a new process group, so that the whole
// group (npx and the node it starts, …) can be signalled at once.
func newGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends a signal to every process of the group led by pid:
// SIGTERM when hard is false, else SIGKILL. A group already gone is no
// error.
func signalGroup(pid int, hard bool) error {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// waitGroupGone waits until no process of the group led by pid is left
// (dead ones are reaped by init), at most for d.
func waitGroupGone(pid int, d time.Duration) {
	deadline := time.Now().Add(d)
	for syscall.Kill(-pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}
