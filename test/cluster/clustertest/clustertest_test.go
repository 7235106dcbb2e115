package clustertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A cluster whose owner was killed leaves its state behind, and the host as its kubelet set it
// (CI, 2026-11-29: the next run's snapshot saw the orphan's sysctls, `up` then restored the
// host's own, and Stop reported the host changed). The orphan must be gone before the
// snapshot: down, snapshot, up, down.
func TestUpClearsAnOrphanBeforeTheSnapshot(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := filepath.Join(dir, "cluster.sh")
	// `up` prints a kubeconfig that does not exist: connecting fails and Up stops the cluster.
	body := "#!/bin/sh\necho \"$1\" >>" + log + "\n[ \"$1\" = up ] && echo " + filepath.Join(dir, "none", "kubeconfig") + "\nexit 0\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CLUSTER_LOCK", filepath.Join(dir, "lock"))
	t.Setenv("CLUSTER_DIR", filepath.Join(dir, "cluster"))
	saved := readHost
	t.Cleanup(func() { readHost = saved })
	readHost = func() host {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			f.WriteString("snapshot\n")
			f.Close()
		}
		return host{}
	}

	if _, err := up(dir, script); err == nil {
		t.Fatal("up with a kubeconfig that does not exist: no error")
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(b)), "down snapshot up down snapshot"; strings.Join(got, " ") != want {
		t.Errorf("the order of the script's commands and the host snapshots: %q, want %q", got, want)
	}
}
