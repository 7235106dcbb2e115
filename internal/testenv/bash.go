package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RunBash runs script with bash as a reader's shell runs a block pasted from the docs: no
// profile or rc file, stopping at the first failing command (-e, pipefail), in dir, with env
// (nil: this process's). The script is read from a file and stdin is /dev/null, so that a
// command of the block that reads stdin cannot eat the rest. It runs in a process group of
// its own, which a cancelled ctx kills whole: blocks start servers in the background. It
// returns stdout and stderr interleaved.
func RunBash(ctx context.Context, t testing.TB, dir string, env []string, script string) (string, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "block.sh")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-e", "-o", "pipefail", file)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	return out.String(), err
}

// EnvWithout is this process's environment without the variables named: what a reader's
// shell would not have, such as the MAKEFLAGS of a make above the test.
func EnvWithout(names ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !slices.Contains(names, strings.SplitN(kv, "=", 2)[0]) {
			env = append(env, kv)
		}
	}
	return env
}

// MakeVars are the variables a make running the tests exports, which change what a make
// in a doc block does (its -j, its variables): a reader's shell has none of them.
var MakeVars = []string{"MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES"}
