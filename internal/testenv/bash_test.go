package testenv

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRunBash(t *testing.T) {
	ctx := context.Background()
	// -e and pipefail: the first failing command, even inside a pipeline, ends the block.
	out, err := RunBash(ctx, t, t.TempDir(), nil, "echo one\nfalse | cat\necho two\n")
	if err == nil || !strings.Contains(out, "one") || strings.Contains(out, "two") {
		t.Errorf("a failing pipeline: err %v, output %q; want an error after \"one\"", err, out)
	}
	// stdin is not the script: a command reading stdin does not eat the next lines.
	out, err = RunBash(ctx, t, t.TempDir(), nil, "cat\necho after\n")
	if err != nil || !strings.Contains(out, "after") {
		t.Errorf("cat then echo: err %v, output %q", err, out)
	}
	// dir and env as given.
	dir := t.TempDir()
	out, err = RunBash(ctx, t, dir, []string{"PATH=" + os.Getenv("PATH"), "X=y"}, "pwd\necho \"X=$X HOME=${HOME:-}\"\n")
	if err != nil || !strings.Contains(out, dir) || !strings.Contains(out, "X=y HOME=\n") {
		t.Errorf("dir and env: err %v, output %q", err, out)
	}
	// A cancelled context ends the background children too, at once.
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := RunBash(ctx, t, t.TempDir(), nil, "sleep 60 &\nwait\n"); err == nil {
		t.Error("a block outliving its context: no error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cancelled block took %s to end", d)
	}
}

func TestEnvWithout(t *testing.T) {
	t.Setenv("MAKEFLAGS", "-j2")
	t.Setenv("OPENAAA_ENV_KEEP", "1")
	env := strings.Join(EnvWithout(MakeVars...), "\n")
	if strings.Contains(env, "MAKEFLAGS=") || !strings.Contains(env, "OPENAAA_ENV_KEEP=1") {
		t.Errorf("EnvWithout(MakeVars...) = %q", env)
	}
}
