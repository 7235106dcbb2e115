// Command pause is the sandbox ("pause") container of the local test cluster's pods
// (hack/cluster.sh): it holds the pod's namespaces, reaps the zombies it inherits as the
// pod's PID 1 and exits on SIGINT or SIGTERM, like Kubernetes' own pause. It is built here
// because no registry that serves registry.k8s.io/pause is reachable from our machines.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		// One SIGCHLD may stand for several exited children.
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
