//go:build unix

package tools

import (
	"os/exec"
	"syscall"
)

// ownGroup puts the command in its own process group and makes a cancel
// kill the whole group, so `sleep 100 &` or a build's workers die with it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
