// Command pause is the process of the test node's pod sandbox ("pause")
// image. It keeps the pod's namespaces alive and does nothing else: it
// waits for SIGTERM or SIGINT and exits 0. As PID 1 of a pod that shares
// its process namespace it also reaps orphaned children. Build it with
// CGO_ENABLED=0: the image holds this one static binary and nothing else.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 16)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
