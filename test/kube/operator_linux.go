package kube

import (
	"os/exec"
	"syscall"
)

// dieWithParent: the operator is killed when the process that started it
// dies (a test binary killed on its timeout leaves no operator holding
// the harness's ports).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
