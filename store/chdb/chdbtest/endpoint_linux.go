package chdbtest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the endpoint when the test binary ends, however
// it ends (a panic, a -timeout, SIGKILL).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
